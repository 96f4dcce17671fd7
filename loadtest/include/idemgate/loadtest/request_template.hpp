// SPDX-License-Identifier: Apache-2.0
#pragma once
// The request every exchange sends, pre-split at each {key} so rendering one is a few appends:
// HTTP/1.1 bytes, or HTTP/2 header fields and a body.
#include <idemgate/loadtest/options.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::loadtest {

// One request as HTTP/2 sends it: header fields (the pseudo-header fields first, names in lower
// case) and the body. Names point into the template, values are rendered per request.
struct request_fields {
    std::vector<std::string_view> names;
    std::vector<std::string> values;
    std::string body;
    bool head_request = false;
};

class request_template {
public:
    explicit request_template(const options& o);
    // One of several targets: its method, origin-form target and body; the rest from `o`.
    request_template(const options& o, const std::string& method, const std::string& target,
                     const std::string& body);

    // The whole request (head and body) for `key` into `out` (cleared first, capacity kept).
    void render(std::string& out, std::string_view key) const;
    // The same request as HTTP/2 fields for `key` (capacity kept).
    void render_fields(request_fields& out, std::string_view key) const;
    bool head_request() const noexcept { return head_request_; }

private:
    // Literal text with {key} holes: parts_[0] key parts_[1] key ... parts_[n].
    struct text_template {
        std::vector<std::string> parts;
        void append(std::string& out, std::string_view key) const;
        std::size_t size(std::size_t key_size) const noexcept;
    };
    static text_template split(std::string_view text);

    text_template head_; // request line and headers, the key header last (its value is {key})
    text_template body_;
    std::vector<std::string> field_names_; // HTTP/2: every field but content-length
    std::vector<text_template> field_values_;
    bool head_request_ = false;
    bool send_length_ = true;
};

} // namespace idemgate::loadtest
