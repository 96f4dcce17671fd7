// SPDX-License-Identifier: Apache-2.0
#include "http/body_framing.hpp"

#include <array>
#include <boost/beast/core/string.hpp>
#include <boost/container/small_vector.hpp>
#include <idemgate/common/record_headers.hpp>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/span_fields.hpp>
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
    case framing_violation::bad_target:
        return "the request target must be a path (origin-form), an http or https URI (absolute-form), "
               "or * for OPTIONS";
    case framing_violation::target_bytes:
        return "the request target must hold only visible ASCII (RFC 9112 3): percent-encode other bytes";
    case framing_violation::target_fragment: return "the request target must not carry a fragment (#...)";
    case framing_violation::target_userinfo: return "an absolute-form target must not carry userinfo (user@)";
    case framing_violation::host_mismatch:
        return "the Host header must name the authority of the absolute-form target (RFC 9112 3.2.2)";
    case framing_violation::non_canonical_method:
        return "standard methods must be spelled in upper case (e.g. POST, not post)";
    case framing_violation::connection_names_host: return "the Connection header must not name Host";
    case framing_violation::bad_host: return "the Host header must be one host[:port] (RFC 9112 3.2)";
    }
    return "";
}

namespace {

// Calls `on_token` for every token of every Connection line (lines need not be adjacent).
template<class Fields, class F>
void for_each_connection_token(const Fields& fields, F&& on_token)
{
    for (const auto& f : fields) {
        if (f.name() != http::field::connection)
            continue;
        std::string_view list = f.value();
        while (!list.empty()) {
            auto comma = list.find(',');
            auto token = trim_ows(list.substr(0, comma));
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
    // Most methods are already upper case: nothing to copy.
    bool lower = false;
    for (char c : method)
        lower |= c >= 'a' && c <= 'z';
    if (!lower)
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
constexpr auto host_bytes = [] {
    std::array<bool, 256> out{};
    for (int c = 0; c < 256; ++c)
        out[static_cast<std::size_t>(c)] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                                           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
                                           c == '~' || c == ':' || c == '[' || c == ']' || c == '%';
    return out;
}();

// The bytes a request target may hold as they are (RFC 9112 3.2: visible ASCII), less '#' (a
// fragment is never sent).
constexpr auto plain_target_byte = [] {
    std::array<bool, 256> out{};
    for (int c = 0x21; c < 0x7f; ++c)
        out[static_cast<std::size_t>(c)] = c != '#';
    return out;
}();

bool is_valid_host(std::string_view host)
{
    for (char c : host)
        if (!host_bytes[static_cast<unsigned char>(c)])
            return false;
    return true;
}

// The scheme prefix of an absolute-form target ("http://" or "https://", any case), or 0.
std::size_t scheme_length(std::string_view target, bool& https)
{
    static constexpr std::string_view http_prefix = "http://";
    static constexpr std::string_view https_prefix = "https://";
    if (target.size() > http_prefix.size() &&
        beast::iequals(target.substr(0, http_prefix.size()), http_prefix)) {
        https = false;
        return http_prefix.size();
    }
    if (target.size() > https_prefix.size() &&
        beast::iequals(target.substr(0, https_prefix.size()), https_prefix)) {
        https = true;
        return https_prefix.size();
    }
    return 0;
}

// host[:port] without the scheme's default port or an empty port (RFC 3986 6.2.3), so that
// "gw.test:80" in an http target names the same authority as "Host: gw.test".
std::string_view normal_authority(std::string_view authority, bool https)
{
    std::string_view default_port = https ? ":443" : ":80";
    if (authority.size() > default_port.size() && authority.ends_with(default_port))
        authority.remove_suffix(default_port.size());
    else if (authority.size() > 1 && authority.back() == ':')
        authority.remove_suffix(1);
    return authority;
}

} // namespace

request_target parse_request_target(std::string_view target, std::string_view method)
{
    request_target out;
    for (char c : target) {
        // One table read for the usual byte: visible ASCII other than '#'.
        if (plain_target_byte[static_cast<unsigned char>(c)])
            continue;
        out.violation = c == '#' ? framing_violation::target_fragment : framing_violation::target_bytes;
        return out;
    }
    if (!target.empty() && target.front() == '/')
        return out;
    if (target == "*") {
        out.form = target_form::asterisk;
        if (method != "OPTIONS")
            out.violation = framing_violation::bad_target;
        return out;
    }
    auto scheme = scheme_length(target, out.https);
    if (scheme == 0) {
        out.violation = framing_violation::bad_target;
        return out;
    }
    out.form = target_form::absolute;
    auto rest = target.substr(scheme);
    auto end = rest.find_first_of("/?");
    out.authority = rest.substr(0, end);
    out.path_and_query = end == std::string_view::npos ? std::string_view{} : rest.substr(end);
    if (out.authority.find('@') != std::string_view::npos)
        out.violation = framing_violation::target_userinfo;
    else if (out.authority.empty() || out.authority.front() == ':' || !is_valid_host(out.authority))
        out.violation = framing_violation::bad_target;
    return out;
}

template<class Fields>
bool to_origin_form(http::request_header<Fields>& header)
{
    auto target = header.target();
    if (target.empty() || target.front() == '/' || target == "*")
        return false;
    auto parsed = parse_request_target(target, header.method_string());
    if (parsed.form != target_form::absolute || parsed.violation != framing_violation::none)
        return false;
    if (header.count(http::field::host) == 0)
        header.set(http::field::host, parsed.authority);
    std::string origin;
    if (parsed.path_and_query.empty() || parsed.path_and_query.front() != '/')
        origin.push_back('/');
    origin.append(parsed.path_and_query);
    header.target(origin);
    return true;
}

template<class Fields>
std::string_view connection_names(const Fields& fields, std::span<const std::string_view> names)
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

template<class Fields>
framing_violation check_request_framing(const Fields& fields, unsigned version, std::string_view target,
                                        std::string_view method)
{
    detail::body_framing_lines lines;
    int host_lines = 0;
    int connection_lines = 0;
    std::string_view host;
    for (const auto& f : fields) {
        if (lines.count(f.name(), f.value()))
            continue;
        if (f.name() == http::field::host) {
            ++host_lines;
            host = f.value();
        } else if (f.name() == http::field::connection) {
            ++connection_lines;
        }
    }
    switch (detail::check_body_framing(lines)) {
    case detail::body_framing_violation::none: break;
    case detail::body_framing_violation::content_length_and_transfer_encoding:
        return framing_violation::content_length_and_transfer_encoding;
    case detail::body_framing_violation::transfer_encoding_not_chunked:
        // RFC 9112 6.1: HTTP/1.0 has no Transfer-Encoding at all, whatever its value.
        return version < 11 ? framing_violation::transfer_encoding_in_http10
                            : framing_violation::transfer_encoding_not_chunked;
    case detail::body_framing_violation::conflicting_content_length:
        return framing_violation::conflicting_content_length;
    }
    if (lines.transfer_encoding_lines > 0 && version < 11)
        return framing_violation::transfer_encoding_in_http10;
    if (version >= 11 && host_lines != 1)
        return framing_violation::missing_host;
    if (host_lines > 1 || !is_valid_host(trim_ows(host)))
        return framing_violation::bad_host;
    auto parsed = parse_request_target(target, method);
    if (parsed.violation != framing_violation::none)
        return parsed.violation;
    if (parsed.form == target_form::absolute && host_lines == 1 &&
        !beast::iequals(normal_authority(trim_ows(host), parsed.https),
                        normal_authority(parsed.authority, parsed.https)))
        return framing_violation::host_mismatch;
    if (is_non_canonical_method(method))
        return framing_violation::non_canonical_method;
    static constexpr std::string_view host_name[] = {"Host"};
    if (connection_lines > 0 && !connection_names(fields, host_name).empty())
        return framing_violation::connection_names_host;
    return framing_violation::none;
}

hop_by_hop_filter::hop_by_hop_filter(const http::fields& fields, bool also_expect) : also_expect_(also_expect)
{
    read(fields);
}

hop_by_hop_filter::hop_by_hop_filter(const span_fields& fields, bool also_expect) : also_expect_(also_expect)
{
    read(fields);
}

template<class Fields>
void hop_by_hop_filter::read(const Fields& fields)
{
    // Headers named in Connection are hop-by-hop too (RFC 9110 7.6.1). Connection lines need not
    // be adjacent (fields keep arrival order), so every line is read. "keep-alive", the usual
    // token, names Keep-Alive, which drops() matches by its enum: no name to compare for it.
    for_each_connection_token(fields, [&](std::string_view token) {
        if (!same_field_name(token, "keep-alive"))
            named_.push_back(token);
    });
}

bool hop_by_hop_filter::drops(http::field name, std::string_view name_string) const
{
    // The fixed set is matched by field enum, named ones by name.
    switch (name) {
    case http::field::connection:
    case http::field::keep_alive:
    case http::field::proxy_connection:
    case http::field::proxy_authorization:
    case http::field::te:
    case http::field::trailer:
    case http::field::transfer_encoding:
    case http::field::upgrade: return true;
    case http::field::expect: return also_expect_;
    default:
        for (const auto& n : named_)
            if (same_field_name(name_string, n))
                return true;
        return false;
    }
}

template<class Fields>
void strip_hop_by_hop(Fields& fields, bool also_expect)
{
    // The filter's names are views into the Connection lines, which are therefore removed last
    // (by position: erasing by name would look it up in the ordered index again).
    hop_by_hop_filter filter(fields, also_expect);
    boost::container::small_vector<typename Fields::const_iterator, 2> connection;
    for (auto it = fields.begin(); it != fields.end();) {
        if (it->name() == http::field::connection) {
            connection.push_back(it);
            ++it;
            continue;
        }
        it = filter.drops(it->name(), it->name_string()) ? fields.erase(it) : std::next(it);
    }
    for (auto it : connection)
        fields.erase(it);
}

template<class Fields>
header_lookup find_header(const Fields& fields, std::string_view name)
{
    // One pass over the lines comparing lengths first: a request has a handful of fields, and
    // the ordered index's lookup compares whole names case-insensitively at every step.
    header_lookup out;
    for (const auto& f : fields) {
        if (same_field_name(f.name_string(), name))
            out.add(f.value());
    }
    return out;
}

bool excluded_from_record(std::string_view name) noexcept
{
    return idemgate::excluded_from_record(name);
}

bool excluded_from_record(http::field name, std::string_view name_string) noexcept
{
    // The same list, read once per field Beast knows by name (it gives each parsed line its enum).
    static const auto known = [] {
        std::array<bool, static_cast<std::size_t>(http::field::xref) + 1> out{};
        for (std::size_t i = 1; i < out.size(); ++i)
            out[i] = idemgate::excluded_from_record(http::to_string(static_cast<http::field>(i)));
        return out;
    }();
    const auto i = static_cast<std::size_t>(name);
    if (name == http::field::unknown || i >= known.size())
        return idemgate::excluded_from_record(name_string);
    return known[i];
}

#define IDEMGATE_FIELDS_FUNCTIONS(F)                                                                         \
    template bool to_origin_form(http::request_header<F>&);                                                  \
    std::string_view connection_names(const F& fields, std::span<const std::string_view> names)              \
    {                                                                                                        \
        return connection_names<F>(fields, names);                                                           \
    }                                                                                                        \
    framing_violation check_request_framing(const F& fields, unsigned version, std::string_view target,      \
                                            std::string_view method)                                         \
    {                                                                                                        \
        return check_request_framing<F>(fields, version, target, method);                                    \
    }                                                                                                        \
    void strip_hop_by_hop(F& fields, bool also_expect)                                                       \
    {                                                                                                        \
        strip_hop_by_hop<F>(fields, also_expect);                                                            \
    }                                                                                                        \
    header_lookup find_header(const F& fields, std::string_view name)                                        \
    {                                                                                                        \
        return find_header<F>(fields, name);                                                                 \
    }
IDEMGATE_FIELDS_FUNCTIONS(http::fields)
IDEMGATE_FIELDS_FUNCTIONS(span_fields)
#undef IDEMGATE_FIELDS_FUNCTIONS

bool has_obs_fold(std::string_view pending, bool line_start) noexcept
{
    if (line_start && !pending.empty() && (pending.front() == ' ' || pending.front() == '\t'))
        return true;
    // Up to the head's empty line: the first "\r\n\r\n".
    return scan_head(pending).folded;
}

} // namespace idemgate::gateway
