// SPDX-License-Identifier: Apache-2.0
#pragma once
// A request head for the upstream made from the bytes the client sent, with the edits spliced
// in: the received field lines that stay are copied as they arrived (one copy per unbroken run),
// lines left out are skipped, and new lines follow the kept ones. The head is one block, so head
// and body go out in one gather write of two buffers (a write of many small pieces cost more in
// the write path than copying them).
//
// Every line is passed as the parsed field (name and value): a received line is used only when
// it is byte for byte "name: value\r\n" at the place it is expected, otherwise the line is
// rendered from the field as the rebuild would render it. So the bytes sent are always those of
// the parsed fields; the received block only saves rendering them one by one.
#include <cstddef>
#include <span>
#include <string>
#include <string_view>

namespace idemgate::gateway {

class head_splice {
public:
    // `received`: the client's head as received, request line through the empty line ("" when
    // there is none: HTTP/2, a request made by the gateway). The head is made in `out`.
    head_splice(std::string_view received, std::string& out);

    // "METHOD target HTTP/1.1": the received request line when it is exactly that.
    void request_line(std::string_view method, std::string_view target);
    // Fields in the order of the parsed request: one kept, or one left out.
    void keep(std::string_view name, std::string_view value);
    void skip(std::string_view name, std::string_view value);
    // Bytes after the kept lines: whole lines, in pieces (copied in one go).
    void add(std::span<const std::string_view> pieces);
    // The whole head, through its empty line.
    std::string_view finish();

private:
    static constexpr std::size_t none = std::string_view::npos;
    // The received line "name: value\r\n" at the cursor (or, after lines the parsed request no
    // longer has, further on): its offset, or `none`.
    std::size_t match(std::string_view name, std::string_view value);
    // Copies the received run not yet copied.
    void flush();
    void render(std::string_view name, std::string_view value);

    std::string_view fields_; // the received head without its empty line, or ""
    std::string& out_;
    std::size_t cursor_ = 0; // the next received field line
    std::size_t run_ = none; // the start of the received run to copy (it ends at the cursor)
};

} // namespace idemgate::gateway
