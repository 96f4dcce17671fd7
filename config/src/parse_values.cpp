// SPDX-License-Identifier: Apache-2.0
#include "loader.hpp"

#include <algorithm>
#include <charconv>
#include <idemgate/common/path_normal_form.hpp>
#include <limits>
#include <string>
#include <utility>

namespace idemgate::config {

namespace detail {
namespace {

// Splits "250ms" into "250" and "ms"; the number part must be non-empty digits.
std::optional<std::pair<std::string_view, std::string_view>> split_number_unit(std::string_view text)
{
    std::size_t i = 0;
    while (i < text.size() && is_digit(text[i]))
        ++i;
    if (i == 0)
        return std::nullopt;
    return std::pair{text.substr(0, i), text.substr(i)};
}

// RFC 9110 5.6.2 tchar: the characters allowed in a method and a header field name.
bool is_tchar(char c)
{
    constexpr std::string_view symbols = "!#$%&'*+-.^_`|~";
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
           symbols.find(c) != std::string_view::npos;
}

} // namespace

// Strict unsigned decimal: digits only, no sign, no spaces, no 0x. Overflow is an error.
std::optional<std::uint64_t> parse_decimal(std::string_view text)
{
    if (text.empty())
        return std::nullopt;
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

// A tenant name: 1 to 255 bytes without control characters. A header tenant is visible ASCII
// (the gateway checks that on each request); one from a client certificate's common name
// (tenant_from: client_cert) may also have spaces and UTF-8.
bool is_tenant_name(std::string_view text)
{
    if (text.empty() || text.size() > 255)
        return false;
    return std::none_of(text.begin(), text.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// "200", "0.5": a finite number >= 0 written in plain decimal.
std::optional<double> parse_rate(std::string_view text)
{
    if (text.empty() || !(is_digit(text.front())))
        return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
    if (ec != std::errc{} || end != text.data() + text.size() || !(value >= 0) || value > 1e9)
        return std::nullopt;
    return value;
}

bool is_token(std::string_view text)
{
    if (text.empty())
        return false;
    for (char c : text)
        if (!is_tchar(c))
            return false;
    return true;
}

std::string prefix_not_normal(std::string_view prefix)
{
    // A prefix may end inside a segment ("/api/ord") or an escape ("/a/%2"): it is judged with
    // "00" after it.
    std::string probe = std::string(prefix) + "00";
    std::string storage;
    auto normal = normalize_path(probe, storage);
    if (normal.problem != path_problem::none)
        return " has no normal form: " + describe(normal.problem, normal.offset);
    if (normal.path == probe)
        return {};
    std::string out = " is not in normal form, and requests are matched on the normal form of their path "
                      "(RFC 3986 6.2.2, runs of '/' as one)";
    auto suggestion = normalize_path(prefix, storage);
    if (suggestion.problem == path_problem::none)
        out += ": write \"" + std::string(suggestion.path) + "\"";
    return out;
}

bool is_host_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.' ||
           c == '_';
}

bool is_ipv6_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.' ||
           c == '%';
}

endpoint_check check_endpoint(std::string_view text)
{
    std::string quoted(1, '"'); // +=: GCC 12 warns falsely (-Wrestrict) on "..." + std::string(...)
    quoted += text;
    quoted += '"';
    auto malformed = endpoint_check{std::nullopt, quoted + " is not an endpoint (use host:port)"};

    std::string host;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        // Bracketed IPv6 literal (RFC 3986 3.2.2); stored without brackets, as resolvers want it.
        auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return malformed;
        auto inside = text.substr(1, close - 1);
        if (inside.empty() || inside.find(':') == std::string_view::npos)
            return malformed;
        for (char c : inside)
            if (!is_ipv6_char(c))
                return malformed;
        host = std::string(inside);
        port_text = text.substr(close + 2);
    } else {
        auto colon = text.rfind(':');
        if (colon == std::string_view::npos || colon == 0)
            return malformed;
        auto host_text = text.substr(0, colon);
        if (host_text.find(':') != std::string_view::npos)
            return {std::nullopt, quoted + " is not an endpoint (write an IPv6 address as [addr]:port)"};
        for (char c : host_text)
            if (!is_host_name_char(c))
                return malformed;
        host = std::string(host_text);
        port_text = text.substr(colon + 1);
    }

    if (port_text.empty())
        return malformed;
    for (char c : port_text)
        if (!is_digit(c))
            return {std::nullopt, quoted + " is not an endpoint (the port must be a decimal number)"};
    auto port = parse_decimal(port_text);
    if (!port || *port > 65535)
        return {std::nullopt, "port " + std::string(port_text) + " out of range (0-65535)"};
    return {endpoint{std::move(host), static_cast<std::uint16_t>(*port)}, {}};
}

} // namespace detail

std::optional<duration> parse_duration(std::string_view text)
{
    auto parts = detail::split_number_unit(text);
    if (!parts)
        return std::nullopt;
    auto [number, unit] = *parts;

    std::uint64_t factor = 0;
    if (unit == "ms")
        factor = 1;
    else if (unit == "s")
        factor = 1000;
    else if (unit == "m")
        factor = 60 * 1000;
    else if (unit == "h")
        factor = 3600 * 1000;
    else if (unit == "d")
        factor = 24ULL * 3600 * 1000;
    else
        return std::nullopt;

    auto value = detail::parse_decimal(number);
    constexpr auto max_ms = static_cast<std::uint64_t>(std::numeric_limits<duration::rep>::max());
    if (!value || *value > max_ms / factor)
        return std::nullopt;
    return duration{static_cast<duration::rep>(*value * factor)};
}

std::optional<duration> parse_shadow_window(std::string_view text)
{
    constexpr duration minute{60 * 1000};
    auto value = parse_duration(text);
    if (!value || *value < minute || *value > shadow_window_longest || value->count() % minute.count() != 0)
        return std::nullopt;
    return value;
}

std::optional<std::size_t> parse_size(std::string_view text)
{
    auto parts = detail::split_number_unit(text);
    if (!parts)
        return std::nullopt;
    auto [number, unit] = *parts;

    std::uint64_t factor = 0;
    if (unit.empty() || unit == "B")
        factor = 1;
    else if (unit == "KiB")
        factor = 1024;
    else if (unit == "MiB")
        factor = 1024 * 1024;
    else if (unit == "GiB")
        factor = 1024 * 1024 * 1024;
    else
        return std::nullopt;

    auto value = detail::parse_decimal(number);
    constexpr auto max_bytes = static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max());
    if (!value || *value > max_bytes / factor)
        return std::nullopt;
    return static_cast<std::size_t>(*value * factor);
}

std::optional<endpoint> parse_endpoint(std::string_view text)
{
    return detail::check_endpoint(text).value;
}

} // namespace idemgate::config
