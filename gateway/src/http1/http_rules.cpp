#include <boost/beast/core/string.hpp>
#include <idemgate/common/record_headers.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <iterator>
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
    case framing_violation::non_canonical_method:
        return "standard methods must be spelled in upper case (e.g. POST, not post)";
    case framing_violation::connection_names_host: return "the Connection header must not name Host";
    case framing_violation::bad_host: return "the Host header must be one host[:port] (RFC 9112 3.2)";
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

// Calls `on_token` for every token of every Connection line (lines need not be adjacent).
template<class F>
void for_each_connection_token(const http::fields& fields, F&& on_token)
{
    for (const auto& f : fields) {
        if (f.name() != http::field::connection)
            continue;
        std::string_view list = f.value();
        while (!list.empty()) {
            auto comma = list.find(',');
            auto token = trim(list.substr(0, comma));
            if (!token.empty())
                on_token(token);
            list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        }
    }
}

bool is_non_canonical_method(std::string_view method)
{
    if (method.empty() || method.size() > 16)
        return false;
    std::string upper(method);
    bool changed = false;
    for (auto& c : upper)
        if (c >= 'a' && c <= 'z') {
            c = static_cast<char>(c - 'a' + 'A');
            changed = true;
        }
    return changed && http::string_to_verb(upper) != http::verb::unknown;
}

// host[:port] as proxies see it in practice: a DNS name, an IPv4 address, or a bracketed IPv6
// literal, then an optional port. Stricter than RFC 3986's reg-name (no sub-delims), on purpose:
// "a, b" or "a@b" in Host is an attack on whoever reads X-Forwarded-Host, not a real host.
bool is_valid_host(std::string_view host)
{
    for (char c : host) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                  c == '.' || c == '_' || c == '~' || c == ':' || c == '[' || c == ']' || c == '%';
        if (!ok)
            return false;
    }
    return true;
}

} // namespace

std::string_view connection_names(const http::fields& fields, std::span<const std::string_view> names)
{
    std::string_view found;
    for_each_connection_token(fields, [&](std::string_view token) {
        if (!found.empty())
            return;
        for (auto n : names)
            if (!n.empty() && beast::iequals(token, n)) {
                found = n;
                return;
            }
    });
    return found;
}

framing_violation check_request_framing(const http::fields& fields, unsigned version, std::string_view target,
                                        std::string_view method)
{
    int content_length_lines = 0;
    int transfer_encoding_lines = 0;
    int host_lines = 0;
    std::string_view host;
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
        case http::field::host:
            ++host_lines;
            host = f.value();
            break;
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
    if (host_lines > 1 || !is_valid_host(trim(host)))
        return framing_violation::bad_host;
    if (target.empty() || target.front() != '/')
        return framing_violation::bad_target;
    if (is_non_canonical_method(method))
        return framing_violation::non_canonical_method;
    static constexpr std::string_view host_name[] = {"Host"};
    if (!connection_names(fields, host_name).empty())
        return framing_violation::connection_names_host;
    return framing_violation::none;
}

void strip_hop_by_hop(http::fields& fields, bool also_expect)
{
    // Headers named in Connection are hop-by-hop too (RFC 9110 7.6.1). Connection lines need not
    // be adjacent (fields keep arrival order), so every line is read.
    std::vector<std::string> named;
    for_each_connection_token(fields, [&](std::string_view token) { named.emplace_back(token); });
    // One pass: the fixed set is matched by field enum, named ones by name.
    for (auto it = fields.begin(); it != fields.end();) {
        bool drop = false;
        switch (it->name()) {
        case http::field::connection:
        case http::field::keep_alive:
        case http::field::proxy_connection:
        case http::field::proxy_authorization:
        case http::field::te:
        case http::field::trailer:
        case http::field::transfer_encoding:
        case http::field::upgrade: drop = true; break;
        case http::field::expect: drop = also_expect; break;
        default:
            for (const auto& n : named)
                if (beast::iequals(it->name_string(), n)) {
                    drop = true;
                    break;
                }
            break;
        }
        it = drop ? fields.erase(it) : std::next(it);
    }
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
    return idemgate::excluded_from_record(name);
}

} // namespace idemgate::gateway
