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

options parse_options(const std::vector<std::string>& args)
{
    options o;
    o.command_line = args;
    bool have_url = false, have_keys = false, method_given = false, streams_given = false;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string flag = args[i];
        std::optional<std::string> inline_value;
        if (flag.rfind("--", 0) == 0) {
            if (auto eq = flag.find('='); eq != std::string::npos) {
                inline_value = flag.substr(eq + 1);
                flag.resize(eq);
            }
        } else if (flag.size() > 2 && flag[0] == '-' &&
                   std::string_view("cdHnRtX").find(flag[1]) != std::string_view::npos) {
            inline_value = flag.substr(2); // getopt's -c16, as wrk and oha take it
            flag.resize(2);
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
        } else if (flag == "--url" || (!flag.empty() && flag[0] != '-')) {
            // A bare argument is the URL, as wrk, oha and curl take it.
            bool positional = flag != "--url";
            std::string v = positional ? flag : value();
            if (have_url)
                throw usage_error((positional ? "\"" + v + "\": " : std::string("--url: ")) +
                                  "the URL is given twice (one URL, or --target for several)");
            std::string error;
            auto url = parse_url(v, error);
            if (!url)
                throw usage_error((positional ? std::string("the URL: ") : std::string("--url: ")) + error);
            o.url = *url;
            have_url = true;
        } else if (flag == "--target") {
            o.targets.push_back(parse_target(flag, value()));
        } else if (flag == "--targets") {
            for (auto& t : read_targets_file(value()))
                o.targets.push_back(std::move(t));
        } else if (flag == "--stages") {
            o.stages = parse_stages(value());
        } else if (flag == "--interval") {
            std::string v = value();
            auto d = parse_duration(v);
            if (!d || *d < std::chrono::milliseconds(100))
                throw usage_error(flag + ": \"" + v + "\" is not a duration of at least 100ms (e.g. 1s)");
            o.interval = *d;
        } else if (flag == "--series") {
            o.series_path = value();
            auto format = series_format_of(o.series_path);
            if (!format)
                throw usage_error(flag + ": \"" + o.series_path +
                                  "\" does not end in .ndjson, .json (NDJSON) or .csv (CSV)");
            o.series_fmt = *format;
        } else if (flag == "--report") {
            o.report_path = value();
            auto ends_with = [&](std::string_view ext) {
                return o.report_path.size() > ext.size() &&
                       o.report_path.compare(o.report_path.size() - ext.size(), ext.size(), ext) == 0;
            };
            if (!ends_with(".html") && !ends_with(".htm"))
                throw usage_error(flag + ": \"" + o.report_path + "\" does not end in .html");
        } else if (flag == "--threshold") {
            std::string error;
            auto t = parse_threshold(value(), error);
            if (!t)
                throw usage_error(flag + ": " + error);
            o.thresholds.push_back(std::move(*t));
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
        } else if (flag == "--http2") {
            if (inline_value)
                throw usage_error("--http2 takes no value");
            o.http2 = true;
        } else if (flag == "--streams") {
            auto n = positive_count(flag, value());
            if (n > 10000)
                throw usage_error(flag + ": at most 10000");
            o.streams = static_cast<unsigned>(n);
            streams_given = true;
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
            method_given = true;
            if (!is_token(o.method))
                throw usage_error(flag + ": \"" + o.method + "\" is not a method token");
        } else if (flag == "-H" || flag == "--header") {
            o.headers.push_back(parse_header(value()));
        } else if (flag == "--body") {
            o.body = value();
            if (!o.body.empty() && o.body.front() == '@')
                o.body = read_body_file("--body", o.body.substr(1));
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
    if (!o.targets.empty()) {
        if (have_url)
            throw usage_error("--target/--targets and a URL: give the URL as a --target");
        if (method_given)
            throw usage_error("--method: each --target names its own method");
        const auto& first = o.targets.front().url;
        for (const auto& t : o.targets)
            if (t.url.tls != first.tls || t.url.host != first.host || t.url.port != first.port)
                throw usage_error("--target \"" + t.text + "\": every target of a run is on one origin (" +
                                  first.text +
                                  "'s scheme, host and port): the connections are kept alive to it");
        o.url = first;
        o.method = o.targets.front().method;
        have_url = true;
    }
    if (!have_url)
        throw usage_error(
            "a URL is required (e.g. idemgate-loadtest http://127.0.0.1:8080/api/orders, or --url, "
            "--target)");
    if (!o.stages.empty()) {
        if (o.rate || o.duration || o.requests || o.mode == workload::storm)
            throw usage_error(
                "--stages sets the rate and the length of the run: --rate, --duration, --requests "
                "and --mode storm do not apply");
        std::chrono::nanoseconds total{};
        for (const auto& s : o.stages)
            total += s.duration;
        o.duration = total;
    }
    for (const auto& h : o.headers) {
        if (boost::beast::iequals(h.name, o.key_header))
            throw usage_error("-H " + h.name + ": the key header is set per request (--key-header)");
        if (o.tenant && boost::beast::iequals(h.name, o.tenant_header))
            throw usage_error("-H " + h.name + " and --tenant both set the tenant header; use one");
    }
    if (streams_given && !o.http2)
        throw usage_error(
            "--streams applies to --http2 only (HTTP/1.1 has one request in flight per connection)");
    if (static_cast<std::uint64_t>(o.connections) * o.streams > 1000000)
        throw usage_error("--connections x --streams: at most 1000000 requests in flight");
    if (o.mode == workload::storm) {
        if (o.duration || o.requests)
            throw usage_error("--mode storm sends --keys x --copies requests; --duration and --requests do "
                              "not apply");
        if (o.rate)
            throw usage_error("--rate does not apply to --mode storm (every copy of a key is sent at once)");
        if (!have_keys)
            o.keys = 100;
        if (o.copies == 0)
            o.copies = o.lanes();
        if (o.copies < 2)
            throw usage_error("--mode storm needs at least 2 copies of each key (--copies, or --connections "
                              "x --streams when --copies is not given)");
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
