// SPDX-License-Identifier: Apache-2.0
#pragma once
// A request head for the upstream written from the bytes the client sent, with the edits spliced
// in: the received field lines that stay are written as they arrived (one buffer per unbroken
// run), lines left out are skipped, and new lines follow the kept ones. The head goes out with
// the body in one gather write.
//
// Every line is passed as the parsed field (name and value): a received line is used only when
// it is byte for byte "name: value\r\n" at the place it is expected, otherwise the line is
// rendered from the field as the rebuild would render it. So the bytes sent are always those of
// the parsed fields; the received block only saves copying them.
#include <boost/asio/buffer.hpp>
#include <boost/container/small_vector.hpp>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

namespace idemgate::gateway {

// The buffers of one request: its head's pieces, then the body.
using request_buffers = boost::container::small_vector<boost::asio::const_buffer, 8>;

class head_splice {
public:
    // `received`: the client's head as received, request line through the empty line ("" when
    // there is none: HTTP/2, a request made by the gateway). `scratch` holds the rendered pieces.
    head_splice(std::string_view received, std::string& scratch);

    // "METHOD target HTTP/1.1": the received request line when it is exactly that.
    void request_line(std::string_view method, std::string_view target);
    // Fields in the order of the parsed request: one kept, or one left out.
    void keep(std::string_view name, std::string_view value);
    void skip(std::string_view name, std::string_view value);
    // A line after the kept ones; its value in parts.
    void add(std::string_view name, std::string_view value);
    void add(std::string_view name, std::initializer_list<std::string_view> value);
    // The head's buffers and then `body` (empty: none).
    request_buffers finish(std::string_view body);

private:
    struct piece {
        bool received; // else in scratch
        std::size_t offset;
        std::size_t size;
    };
    // The received line "name: value\r\n" at the cursor (or, after lines the parsed request no
    // longer has, further on): its offset, or npos.
    std::size_t match(std::string_view name, std::string_view value);
    void push(bool received, std::size_t offset, std::size_t size);
    void render(std::string_view name, std::string_view value);

    std::string_view received_;
    std::string& scratch_;
    std::size_t cursor_ = 0; // the next received field line
    boost::container::small_vector<piece, 8> pieces_;
};

} // namespace idemgate::gateway
