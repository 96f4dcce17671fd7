#include "transport/wire.hpp"

#include <charconv>

namespace idemgate::gateway {

namespace asio = boost::asio;

namespace {

void append_version(unsigned version, std::string& out)
{
    out.append(version == 10 ? "HTTP/1.0" : "HTTP/1.1");
}

void append_fields(const http::fields& f, std::string& out)
{
    for (const auto& field : f) {
        out.append(field.name_string());
        out.append(": ");
        out.append(field.value());
        out.append("\r\n");
    }
    out.append("\r\n");
}

} // namespace

void render_head(const http::request_header<>& h, std::string& out)
{
    out.append(h.method_string());
    out.push_back(' ');
    out.append(h.target());
    out.push_back(' ');
    append_version(h.version(), out);
    out.append("\r\n");
    append_fields(h, out);
}

void render_head(const http::response_header<>& h, std::string& out)
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

} // namespace idemgate::gateway
