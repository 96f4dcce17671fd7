// SPDX-License-Identifier: Apache-2.0
// The URLs and durations of the command line.
#include <boost/beast/core/string.hpp>
#include <cctype>
#include <charconv>
#include <idemgate/loadtest/options.hpp>

namespace idemgate::loadtest {

namespace {

template<class T>
bool parse_number(std::string_view text, T& out)
{
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && ptr == text.data() + text.size();
}

bool has_control(std::string_view s)
{
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t') || u == 0x7f)
            return true;
    }
    return false;
}

} // namespace

std::optional<target_url> parse_url(std::string_view text, std::string& error)
{
    target_url url;
    url.text = std::string(text);
    std::string_view scheme = "http://";
    if (text.size() >= 8 && boost::beast::iequals(text.substr(0, 8), "https://")) {
        scheme = "https://";
        url.tls = true;
        url.port = "443";
    } else if (text.size() < scheme.size() || !boost::beast::iequals(text.substr(0, scheme.size()), scheme)) {
        // Built with +=, not "..." + std::string(...): GCC 12 warns falsely (-Wrestrict) on that.
        std::string message(1, '"');
        message += text;
        message += "\" does not start with http:// or https://";
        error = std::move(message);
        return std::nullopt;
    }
    text.remove_prefix(scheme.size());
    auto path_at = text.find_first_of("/?#");
    std::string_view authority = text.substr(0, path_at);
    std::string_view rest = path_at == std::string_view::npos ? std::string_view{} : text.substr(path_at);
    if (auto hash = rest.find('#'); hash != std::string_view::npos)
        rest = rest.substr(0, hash);
    if (authority.empty() || authority.find('@') != std::string_view::npos) {
        error = "\"" + url.text + "\" has no host (or has user info, which is not supported)";
        return std::nullopt;
    }
    url.host_header = std::string(authority);
    std::string_view host = authority;
    std::string_view port;
    if (authority.front() == '[') { // IPv6 literal
        auto close = authority.find(']');
        if (close == std::string_view::npos) {
            error = "\"" + url.text + "\": unterminated IPv6 address";
            return std::nullopt;
        }
        host = authority.substr(1, close - 1);
        std::string_view after = authority.substr(close + 1);
        if (!after.empty()) {
            if (after.front() != ':') {
                error = "\"" + url.text + "\": junk after the IPv6 address";
                return std::nullopt;
            }
            port = after.substr(1);
        }
    } else if (auto colon = authority.rfind(':'); colon != std::string_view::npos) {
        host = authority.substr(0, colon);
        port = authority.substr(colon + 1);
    }
    if (!port.empty()) {
        unsigned n = 0;
        if (!parse_number(port, n) || n == 0 || n > 65535) {
            error = "\"" + url.text + "\": port \"" + std::string(port) + "\" is not 1-65535";
            return std::nullopt;
        }
        url.port = std::string(port);
    }
    if (host.empty()) {
        error = "\"" + url.text + "\" has no host";
        return std::nullopt;
    }
    url.host = std::string(host);
    // target_url::target defaults to "/" (an empty path); a bare query gets the "/" in front.
    if (!rest.empty() && rest.front() == '?') {
        std::string target(1, '/');
        target += rest;
        url.target = std::move(target);
    } else if (!rest.empty()) {
        url.target = std::string(rest);
    }
    if (has_control(url.target) || url.target.find(' ') != std::string::npos) {
        error = "\"" + url.text + "\": the path contains spaces or control characters";
        return std::nullopt;
    }
    return url;
}

std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text)
{
    std::size_t digits = 0;
    while (digits < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
        ++digits;
    double value = 0;
    if (digits == 0 || !parse_number(text.substr(0, digits), value) || !(value > 0))
        return std::nullopt;
    std::string_view unit = text.substr(digits);
    double ns_per_unit = 0;
    if (unit.empty() || unit == "s")
        ns_per_unit = 1e9;
    else if (unit == "ms")
        ns_per_unit = 1e6;
    else if (unit == "m")
        ns_per_unit = 60e9;
    else if (unit == "h")
        ns_per_unit = 3600e9;
    else
        return std::nullopt;
    double ns = value * ns_per_unit;
    if (ns < 1 || ns > 1e9 * 86400 * 365)
        return std::nullopt;
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
}

} // namespace idemgate::loadtest
