// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cctype>
#include <idemgate/loadtest/request_template.hpp>

#ifndef IDEMGATE_VERSION
#define IDEMGATE_VERSION "dev"
#endif

namespace idemgate::loadtest {

request_template::text_template request_template::split(std::string_view text)
{
    text_template t;
    constexpr std::string_view hole = "{key}";
    for (;;) {
        auto at = text.find(hole);
        if (at == std::string_view::npos) {
            t.parts.emplace_back(text);
            return t;
        }
        t.parts.emplace_back(text.substr(0, at));
        text.remove_prefix(at + hole.size());
    }
}

void request_template::text_template::append(std::string& out, std::string_view key) const
{
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i != 0)
            out.append(key);
        out.append(parts[i]);
    }
}

std::size_t request_template::text_template::size(std::size_t key_size) const noexcept
{
    std::size_t n = (parts.size() - 1) * key_size;
    for (const auto& p : parts)
        n += p.size();
    return n;
}

request_template::request_template(const options& o) : request_template(o, o.method, o.url.target, o.body) {}

request_template::request_template(const options& o, const std::string& method, const std::string& target,
                                   const std::string& body)
{
    std::string head;
    head += method + " " + target + " HTTP/1.1\r\nHost: " + o.url.host_header + "\r\n";
    head += "User-Agent: idemgate-loadtest/" IDEMGATE_VERSION "\r\n";
    for (const auto& h : o.headers)
        head += h.name + ": " + h.value + "\r\n";
    if (o.tenant)
        head += o.tenant_header + ": " + *o.tenant + "\r\n";
    head += o.key_header + ": {key}\r\n";
    head_ = split(head);
    body_ = split(body);
    head_request_ = method == "HEAD";
    // A GET or HEAD without a body sends no Content-Length (RFC 9110 8.6); others send 0.
    send_length_ = !(body.empty() && (method == "GET" || method == "HEAD"));

    // HTTP/2 (RFC 9113 8.3.1): the request line and Host as pseudo-header fields, every name in
    // lower case (8.2.1).
    auto field = [this](std::string name, std::string_view value) {
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        field_names_.push_back(std::move(name));
        field_values_.push_back(split(value));
    };
    field(":method", method);
    field(":scheme", o.url.tls ? "https" : "http");
    field(":authority", o.url.host_header);
    field(":path", target);
    field("user-agent", "idemgate-loadtest/" IDEMGATE_VERSION);
    for (const auto& h : o.headers)
        field(h.name, h.value);
    if (o.tenant)
        field(o.tenant_header, *o.tenant);
    field(o.key_header, "{key}");
}

void request_template::render(std::string& out, std::string_view key) const
{
    out.clear();
    head_.append(out, key);
    if (send_length_) {
        out += "Content-Length: ";
        out += std::to_string(body_.size(key.size()));
        out += "\r\n";
    }
    out += "\r\n";
    body_.append(out, key);
}

void request_template::render_fields(request_fields& out, std::string_view key) const
{
    std::size_t n = field_names_.size() + (send_length_ ? 1 : 0);
    out.names.resize(n);
    out.values.resize(n);
    for (std::size_t i = 0; i < field_names_.size(); ++i) {
        out.names[i] = field_names_[i];
        out.values[i].clear();
        field_values_[i].append(out.values[i], key);
    }
    out.body.clear();
    body_.append(out.body, key);
    if (send_length_) {
        out.names.back() = "content-length";
        out.values.back() = std::to_string(out.body.size());
    }
    out.head_request = head_request_;
}

} // namespace idemgate::loadtest
