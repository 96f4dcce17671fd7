#include <boost/beast/core/string.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <string>
#include <vector>

namespace idemgate::gateway {

namespace beast = boost::beast;

std::string_view describe(framing_violation v) noexcept
{
    switch (v) {
    case framing_violation::none: return "";
    case framing_violation::content_length_and_transfer_encoding:
        return "a request must not carry both Content-Length and Transfer-Encoding";
    case framing_violation::transfer_encoding_not_chunked:
        return "Transfer-Encoding must be exactly \"chunked\"";
    case framing_violation::transfer_encoding_in_http10:
        return "HTTP/1.0 requests must not use Transfer-Encoding";
    case framing_violation::conflicting_content_length:
        return "Content-Length must appear once with one value";
    case framing_violation::missing_host: return "an HTTP/1.1 request needs exactly one Host header";
    case framing_violation::bad_target: return "the request target must be an absolute path (origin-form)";
    }
    return "";
}

namespace {

std::string_view trim(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

} // namespace

framing_violation check_request_framing(const http::fields& fields, unsigned version, std::string_view target)
{
    int content_length_lines = 0;
    int transfer_encoding_lines = 0;
    int host_lines = 0;
    std::string_view content_length;
    std::string_view transfer_encoding;
    for (const auto& f : fields) {
        switch (f.name()) {
        case http::field::content_length:
            ++content_length_lines;
            content_length = f.value();
            break;
        case http::field::transfer_encoding:
            ++transfer_encoding_lines;
            transfer_encoding = f.value();
            break;
        case http::field::host: ++host_lines; break;
        default: break;
        }
    }
    if (content_length_lines > 0 && transfer_encoding_lines > 0)
        return framing_violation::content_length_and_transfer_encoding;
    if (transfer_encoding_lines > 0 && version < 11)
        return framing_violation::transfer_encoding_in_http10;
    if (transfer_encoding_lines > 1 ||
        (transfer_encoding_lines == 1 && !beast::iequals(trim(transfer_encoding), "chunked")))
        return framing_violation::transfer_encoding_not_chunked;
    if (content_length_lines > 1 || content_length.find(',') != std::string_view::npos)
        return framing_violation::conflicting_content_length;
    if (version >= 11 && host_lines != 1)
        return framing_violation::missing_host;
    if (target.empty() || target.front() != '/')
        return framing_violation::bad_target;
    return framing_violation::none;
}

void strip_hop_by_hop(http::fields& fields, bool also_expect)
{
    // Headers named in Connection are hop-by-hop too (RFC 9110 7.6.1).
    std::vector<std::string> named;
    for (auto it = fields.find(http::field::connection);
         it != fields.end() && it->name() == http::field::connection; ++it) {
        std::string_view list = it->value();
        while (!list.empty()) {
            auto comma = list.find(',');
            auto token = trim(list.substr(0, comma));
            if (!token.empty())
                named.emplace_back(token);
            list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        }
    }
    for (const auto& n : named)
        fields.erase(n);
    fields.erase(http::field::connection);
    fields.erase(http::field::keep_alive);
    fields.erase(http::field::proxy_connection);
    fields.erase(http::field::proxy_authorization);
    fields.erase(http::field::te);
    fields.erase(http::field::trailer);
    fields.erase(http::field::transfer_encoding);
    fields.erase(http::field::upgrade);
    if (also_expect)
        fields.erase(http::field::expect);
}

header_lookup find_header(const http::fields& fields, std::string_view name)
{
    header_lookup out;
    auto range = fields.equal_range(name);
    for (auto it = range.first; it != range.second; ++it) {
        if (out.count++ == 0)
            out.value = it->value();
    }
    return out;
}

bool excluded_from_record(std::string_view name) noexcept
{
    static constexpr std::string_view excluded[] = {"connection",
                                                    "keep-alive",
                                                    "proxy-connection",
                                                    "proxy-authenticate",
                                                    "proxy-authorization",
                                                    "te",
                                                    "trailer",
                                                    "transfer-encoding",
                                                    "upgrade",
                                                    "content-length",
                                                    "set-cookie",
                                                    "idempotent-replayed"};
    for (auto e : excluded)
        if (beast::iequals(name, e))
            return true;
    return false;
}

} // namespace idemgate::gateway
