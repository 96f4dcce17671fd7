// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <cctype>
#include <charconv>
#include <cmath>
#include <idemgate/loadtest/options.hpp>
#include <thread>

namespace idemgate::loadtest {

namespace {

std::string lower(std::string_view s)
{
    std::string out(s);
    for (auto& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

template<class T>
bool parse_number(std::string_view text, T& out)
{
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && ptr == text.data() + text.size();
}

std::uint64_t positive_count(std::string_view flag, std::string_view value)
{
    std::uint64_t n = 0;
    if (!parse_number(value, n) || n == 0)
        throw usage_error(std::string(flag) + ": \"" + std::string(value) + "\" is not a positive integer");
    return n;
}

// A header name is an RFC 9110 token.
bool is_token(std::string_view s)
{
    static constexpr std::string_view extra = "!#$%&'*+-.^_`|~";
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || extra.find(c) != std::string_view::npos;
    });
}

bool has_control(std::string_view s)
{
    return std::any_of(s.begin(), s.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return (u < 0x20 && c != '\t') || u == 0x7f;
    });
}

header_template parse_header(std::string_view text)
{
    auto colon = text.find(':');
    if (colon == std::string_view::npos)
        throw usage_error("-H: \"" + std::string(text) + "\" is not 'Name: value'");
    std::string_view name = text.substr(0, colon);
    std::string_view value = text.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
    if (!is_token(name))
        throw usage_error("-H: \"" + std::string(name) + "\" is not a valid header name");
    if (has_control(value))
        throw usage_error("-H " + std::string(name) + ": the value contains control characters");
    static constexpr std::string_view framing[] = {"host", "content-length", "transfer-encoding",
                                                   "connection"};
    for (auto f : framing)
        if (boost::beast::iequals(name, f))
            throw usage_error("-H " + std::string(name) +
                              ": set by idemgate-loadtest itself (the URL, --body, "
                              "keep-alive)");
    return {std::string(name), std::string(value)};
}

} // namespace

std::string_view to_string(workload w) noexcept
{
    switch (w) {
    case workload::replay: return "replay";
    case workload::first: return "first";
    case workload::mixed: return "mixed";
    case workload::storm: return "storm";
    }
    return "unknown";
}

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

options parse_options(const std::vector<std::string>& args)
{
    options o;
    bool have_url = false, have_keys = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::optional<std::string> inline_value;
        if (flag.rfind("--", 0) == 0) {
            if (auto eq = flag.find('='); eq != std::string::npos) {
                inline_value = flag.substr(eq + 1);
                flag.resize(eq);
            }
        }
        auto value = [&]() -> std::string {
            if (inline_value)
                return *inline_value;
            if (i + 1 >= args.size())
                throw usage_error(flag + ": a value is required");
            return args[++i];
        };
        if (flag == "--help" || flag == "-h") {
            o.help = true;
        } else if (flag == "--version") {
            o.version = true;
        } else if (flag == "--url") {
            std::string error;
            auto url = parse_url(value(), error);
            if (!url)
                throw usage_error("--url: " + error);
            o.url = *url;
            have_url = true;
        } else if (flag == "--mode") {
            std::string v = value();
            if (v == "replay") {
                o.mode = workload::replay;
            } else if (v == "first") {
                o.mode = workload::first;
                o.replay_percent = 0;
            } else if (v == "storm") {
                o.mode = workload::storm;
            } else if (v.rfind("mixed:", 0) == 0) {
                int p = -1;
                std::string_view pct = std::string_view(v).substr(6);
                if (!pct.empty() && pct.back() == '%')
                    pct.remove_suffix(1);
                if (!parse_number(pct, p) || p < 0 || p > 100)
                    throw usage_error("--mode: \"" + v + "\": mixed:<replay %> takes 0 to 100");
                o.mode = workload::mixed;
                o.replay_percent = p;
            } else {
                throw usage_error("--mode: \"" + v + "\" is not replay, first, mixed:<replay %> or storm");
            }
        } else if (flag == "--keys") {
            o.keys = positive_count(flag, value());
            have_keys = true;
        } else if (flag == "--connections" || flag == "-c") {
            auto n = positive_count(flag, value());
            if (n > 100000)
                throw usage_error(flag + ": at most 100000");
            o.connections = static_cast<unsigned>(n);
        } else if (flag == "--threads" || flag == "-t") {
            auto n = positive_count(flag, value());
            if (n > 256)
                throw usage_error(flag + ": at most 256");
            o.threads = static_cast<unsigned>(n);
        } else if (flag == "--duration" || flag == "-d") {
            std::string v = value();
            o.duration = parse_duration(v);
            if (!o.duration)
                throw usage_error(flag + ": \"" + v + "\" is not a duration (e.g. 500ms, 10s, 2m)");
        } else if (flag == "--requests" || flag == "-n") {
            o.requests = positive_count(flag, value());
        } else if (flag == "--rate" || flag == "-R") {
            std::string v = value();
            double r = 0;
            if (!parse_number(std::string_view(v), r) || !(r > 0) || !std::isfinite(r))
                throw usage_error(flag + ": \"" + v + "\" is not a positive rate (requests per second)");
            o.rate = r;
        } else if (flag == "--copies") {
            auto n = positive_count(flag, value());
            if (n > 100000)
                throw usage_error(flag + ": at most 100000");
            o.copies = static_cast<unsigned>(n);
        } else if (flag == "--method" || flag == "-X") {
            o.method = value();
            if (!is_token(o.method))
                throw usage_error(flag + ": \"" + o.method + "\" is not a method token");
        } else if (flag == "-H" || flag == "--header") {
            o.headers.push_back(parse_header(value()));
        } else if (flag == "--body") {
            o.body = value();
        } else if (flag == "--key-header") {
            o.key_header = value();
            if (!is_token(o.key_header))
                throw usage_error(flag + ": \"" + o.key_header + "\" is not a valid header name");
        } else if (flag == "--tenant") {
            o.tenant = value();
            if (o.tenant->empty() || has_control(*o.tenant))
                throw usage_error(flag + ": empty or contains control characters");
        } else if (flag == "--tenant-header") {
            o.tenant_header = value();
            if (!is_token(o.tenant_header))
                throw usage_error(flag + ": \"" + o.tenant_header + "\" is not a valid header name");
        } else if (flag == "--key-prefix") {
            o.key_prefix = value();
            if (o.key_prefix.empty() || o.key_prefix.size() > 200 ||
                !std::all_of(o.key_prefix.begin(), o.key_prefix.end(),
                             [](char c) { return c >= 0x21 && c <= 0x7e; }))
                throw usage_error(flag + ": 1 to 200 visible ASCII characters");
        } else if (flag == "--metrics") {
            std::string error;
            auto url = parse_url(value(), error);
            if (!url)
                throw usage_error("--metrics: " + error);
            if (url->tls)
                throw usage_error("--metrics: the admin listener is read over plain http://");
            o.metrics.push_back(*url);
        } else if (flag == "--ignore-header") {
            std::string v = value();
            if (!is_token(v))
                throw usage_error(flag + ": \"" + v + "\" is not a valid header name");
            o.ignore_headers.push_back(lower(v));
        } else if (flag == "--timeout") {
            std::string v = value();
            auto d = parse_duration(v);
            if (!d)
                throw usage_error(flag + ": \"" + v + "\" is not a duration (e.g. 2s)");
            o.timeout = *d;
        } else if (flag == "--expect-status") {
            std::string v = value(), error;
            auto set = parse_status_list(v, error);
            if (!set)
                throw usage_error(flag + ": " + error);
            o.expected_statuses = *set;
            o.expected_given = true;
        } else if (flag == "--max-unexpected") {
            std::string v = value();
            std::string_view pct = v;
            if (!pct.empty() && pct.back() == '%')
                pct.remove_suffix(1);
            double p = -1;
            if (!parse_number(pct, p) || !(p >= 0) || p > 100)
                throw usage_error(flag + ": \"" + v + "\" is not a share of answers from 0 to 100 (%)");
            o.max_unexpected_percent = p;
        } else if (flag == "--insecure" || flag == "-k") {
            o.insecure = true;
        } else if (flag == "--cacert") {
            o.cacert = value();
            if (o.cacert.empty())
                throw usage_error(flag + ": a file of PEM certificates is required");
        } else if (flag == "--json") {
            if (inline_value)
                throw usage_error("--json takes no value");
            o.json = true;
        } else {
            throw usage_error("unknown option \"" + args[i] + "\" (see --help)");
        }
    }
    if (o.help || o.version)
        return o;
    if (!have_url)
        throw usage_error("--url is required (e.g. --url http://127.0.0.1:8080/api/orders)");
    for (const auto& h : o.headers) {
        if (boost::beast::iequals(h.name, o.key_header))
            throw usage_error("-H " + h.name + ": the key header is set per request (--key-header)");
        if (o.tenant && boost::beast::iequals(h.name, o.tenant_header))
            throw usage_error("-H " + h.name + " and --tenant both set the tenant header; use one");
    }
    if (o.mode == workload::storm) {
        if (o.duration || o.requests)
            throw usage_error("--mode storm sends --keys x --copies requests; --duration and --requests do "
                              "not apply");
        if (o.rate)
            throw usage_error("--rate does not apply to --mode storm (every copy of a key is sent at once)");
        if (!have_keys)
            o.keys = 100;
        if (o.copies == 0)
            o.copies = o.connections;
        if (o.copies < 2)
            throw usage_error("--mode storm needs at least 2 copies of each key (--copies, or --connections "
                              "when --copies is not given)");
    } else {
        if (o.copies != 0)
            throw usage_error("--copies applies to --mode storm only");
        if (o.duration && o.requests)
            throw usage_error("--duration and --requests: give one");
        if (!o.duration && !o.requests)
            o.duration = std::chrono::seconds(10);
    }
    if (!o.expected_given)
        o.expected_statuses = default_expected_statuses(o.mode);
    if ((o.insecure || !o.cacert.empty()) && !o.url.tls)
        throw usage_error(std::string(o.insecure ? "--insecure" : "--cacert") +
                          " applies to https:// URLs only");
    if (o.threads == 0) {
        unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        o.threads = std::min(2u, cores);
    }
    o.threads = std::min(o.threads, o.connections);
    return o;
}

} // namespace idemgate::loadtest
