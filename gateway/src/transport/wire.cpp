// SPDX-License-Identifier: Apache-2.0
#include "transport/wire.hpp"

#include <charconv>
#include <idemgate/gateway/span_fields.hpp>

namespace idemgate::gateway {

namespace asio = boost::asio;

namespace {

void append_version(unsigned version, std::string& out)
{
    out.append(version == 10 ? "HTTP/1.0" : "HTTP/1.1");
}

template<class Fields>
void append_fields(const Fields& f, std::string& out)
{
    for (const auto& field : f) {
        auto name = field.name_string();
        auto value = field.value();
        // Beast keeps a field as the line "name: value\r\n" in one block: appended in one piece
        // when laid out so, else part by part.
        const char* line = name.data();
        const char* value_end = value.data() + value.size();
        if (value.data() == line + name.size() + 2 && line[name.size()] == ':' &&
            line[name.size() + 1] == ' ' && value_end[0] == '\r' && value_end[1] == '\n') {
            out.append(line, static_cast<std::size_t>(value_end + 2 - line));
            continue;
        }
        out.append(name);
        out.append(": ");
        out.append(value);
        out.append("\r\n");
    }
    out.append("\r\n");
}

template<class Fields>
void render_request_head(const http::request_header<Fields>& h, std::string& out)
{
    out.append(h.method_string());
    out.push_back(' ');
    out.append(h.target());
    out.push_back(' ');
    append_version(h.version(), out);
    out.append("\r\n");
    append_fields(h, out);
}

template<class Fields>
void render_response_head(const http::response_header<Fields>& h, std::string& out)
{
    append_version(h.version(), out);
    char code[8];
    auto [end, ec] = std::to_chars(code, code + sizeof code, h.result_int());
    out.push_back(' ');
    out.append(code, end);
    out.push_back(' ');
    out.append(h.reason());
    out.append("\r\n");
    append_fields(h, out);
}

} // namespace

template<bool isRequest, class Fields>
void render_head(const http::header<isRequest, Fields>& h, std::string& out)
{
    if constexpr (isRequest)
        render_request_head(h, out);
    else
        render_response_head(h, out);
}

template void render_head(const http::request_header<http::fields>&, std::string&);
template void render_head(const http::response_header<http::fields>&, std::string&);
template void render_head(const http::request_header<span_fields>&, std::string&);
template void render_head(const http::response_header<span_fields>&, std::string&);

} // namespace idemgate::gateway
