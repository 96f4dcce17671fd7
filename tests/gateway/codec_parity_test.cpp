// SPDX-License-Identifier: Apache-2.0
// One request epilogue for every codec: the same requests sent over HTTP/1.1 and over HTTP/2
// (curl, prior knowledge on a cleartext listener) are counted alike on /metrics (requests by
// outcome, latency observations overall and by route, requests by route, method and status
// class) and give access
// lines with the same fields and values, the protocol's own fields aside.
#include "gateway_fixture.hpp"

#include <algorithm>
#include <doctest/doctest.h>
#include <map>
#include <set>
#include <sstream>

using namespace idemgate::test;

namespace {

// Every sample on /metrics whose name starts with one of `families`, by series.
std::map<std::string, double> samples(std::uint16_t admin_port, const std::vector<std::string>& families)
{
    std::map<std::string, double> out;
    std::istringstream in(http_request(admin_port, "GET", "/metrics").body);
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty() || line.front() == '#')
            continue;
        for (const auto& f : families) {
            if (line.rfind(f, 0) == 0) {
                auto space = line.rfind(' ');
                out[line.substr(0, space)] = std::stod(line.substr(space + 1));
            }
        }
    }
    return out;
}

// What changed between two snapshots (series absent before count from 0).
std::map<std::string, double> delta(const std::map<std::string, double>& before,
                                    const std::map<std::string, double>& after)
{
    std::map<std::string, double> out;
    for (const auto& [series, value] : after) {
        auto it = before.find(series);
        double d = value - (it == before.end() ? 0 : it->second);
        if (d != 0)
            out[series] = d;
    }
    return out;
}

// The access lines written after the first `skip` lines of the gateway's output, in order.
std::vector<boost::json::object> access_lines(gateway_fixture& g, std::size_t skip)
{
    std::vector<boost::json::object> out;
    auto lines = g.process().lines();
    for (std::size_t i = skip; i < lines.size(); ++i) {
        auto obj = parse_object(lines[i]);
        if (auto* msg = obj.if_contains("msg"); msg && *msg == "access")
            out.push_back(std::move(obj));
    }
    return out;
}

// An access line without what differs by protocol or by run (times, IDs, the stream, the
// upstream's timing and address), the protocol's tag in keys and request IDs made common.
boost::json::object comparable(boost::json::object line, const std::string& tag)
{
    for (auto name : {"ts", "time", "latency_us", "upstream_us", "upstream_ms", "upstream_address",
                      "request_id", "trace_id", "protocol", "proto", "stream"})
        line.erase(name);
    if (auto* key = line.if_contains("key"); key && key->is_string()) {
        std::string k(key->as_string());
        if (auto at = k.find(tag); at != std::string::npos)
            k.erase(at, tag.size());
        *key = k;
    }
    return line;
}

// `line` with its members in name order, so that two equal lines serialize alike.
boost::json::object sorted(const boost::json::object& line)
{
    std::map<std::string, boost::json::value> by_name;
    for (const auto& member : line)
        by_name.emplace(std::string(member.key()), member.value());
    boost::json::object out;
    for (auto& [name, value] : by_name)
        out.emplace(name, value);
    return out;
}

struct request_case {
    std::string name;
    std::vector<std::string> args; // curl arguments before the URL
    std::string path;
};

// The cases, keyed by `tag` so that both protocols run each afresh.
std::vector<request_case> cases(const std::string& tag)
{
    const std::string key = "parity-key" + tag;
    const std::string big(4096, 'x'); // over limits.max_request_body (1KiB here)
    return {
        {"executed", {"-X", "POST", "-H", "Idempotency-Key: " + key, "-d", "{\"n\":1}"}, "/api/orders"},
        {"replayed", {"-X", "POST", "-H", "Idempotency-Key: " + key, "-d", "{\"n\":1}"}, "/api/orders"},
        {"mismatch", {"-X", "POST", "-H", "Idempotency-Key: " + key, "-d", "{\"n\":2}"}, "/api/orders"},
        {"bad key",
         {"-X", "POST", "-H", "Idempotency-Key: " + std::string(300, 'k'), "-d", "{}"},
         "/api/orders"},
        {"unkeyed", {"-X", "POST", "-d", "{}"}, "/api/orders"},
        {"plain route", {}, "/plain/thing"},
        {"no route", {}, "/nowhere"},
        {"upstream down", {"-X", "POST", "-H", "Idempotency-Key: down" + tag, "-d", "{}"}, "/down/x"},
        {"body too large", {"-X", "POST", "-H", "Idempotency-Key: big" + tag, "-d", big}, "/api/orders"},
    };
}

} // namespace

TEST_SUITE_BEGIN("codec parity");

TEST_CASE("HTTP/1.1 and HTTP/2 count and log the same requests alike")
{
    gateway_options options;
    options.top_level = "http2:\n  cleartext: true\n";
    options.limits = "  max_request_body: 1KiB\n";
    gateway_fixture g(options);
    const auto admin = g.gateway->admin_port();
    const std::vector<std::string> families{"idemgate_requests_total", "idemgate_route_requests_total",
                                            "idemgate_request_duration_seconds_count",
                                            "idemgate_route_request_duration_seconds_count"};
    const auto base = "http://127.0.0.1:" + std::to_string(g.port());

    struct run_result {
        std::map<std::string, double> metrics;
        std::vector<boost::json::object> lines;
        std::vector<std::string> statuses;
    };
    auto run = [&](const std::string& protocol_flag, const std::string& tag) {
        run_result r;
        const auto before = samples(admin, families);
        const auto skip = g.process().lines().size();
        for (const auto& c : cases(tag)) {
            std::vector<std::string> args{"-sS", protocol_flag, "-o", "/dev/null", "-w", "%{http_code}\n"};
            args.insert(args.end(), c.args.begin(), c.args.end());
            args.push_back(base + c.path);
            child_process curl("/usr/bin/curl", args);
            auto status = curl.wait_exit(15s);
            REQUIRE(status.has_value());
            auto out = curl.lines();
            r.statuses.push_back(c.name + ": " + (out.empty() ? std::string("none") : out.back()));
        }
        const auto expected = cases(tag).size();
        REQUIRE(poll_until(5s, [&] { return access_lines(g, skip).size() >= expected; }));
        r.lines = access_lines(g, skip);
        r.metrics = delta(before, samples(admin, families));
        return r;
    };
    const auto h1 = run("--http1.1", "-h1");
    const auto h2 = run("--http2-prior-knowledge", "-h2");

    // The statuses first: the same requests, the same answers.
    CHECK(h1.statuses == h2.statuses);
    INFO("statuses: " << [&] {
        std::string all;
        for (const auto& s : h1.statuses)
            all += s + "; ";
        return all;
    }());
    // Every case counted once by outcome, by route and in the latency histogram, over both.
    double requests = 0;
    for (const auto& [series, n] : h1.metrics)
        if (series.rfind("idemgate_requests_total", 0) == 0)
            requests += n;
    CHECK(requests == static_cast<double>(cases("").size()));
    double by_route = 0;
    for (const auto& [series, n] : h2.metrics)
        if (series.rfind("idemgate_route_requests_total", 0) == 0)
            by_route += n;
    CHECK(by_route == static_cast<double>(cases("").size()));
    // Each handled request's latency observed by route as overall, over both protocols.
    for (const auto* r : {&h1, &h2}) {
        double observed = 0, observed_by_route = 0;
        for (const auto& [series, n] : r->metrics) {
            if (series.rfind("idemgate_request_duration_seconds_count", 0) == 0)
                observed += n;
            if (series.rfind("idemgate_route_request_duration_seconds_count", 0) == 0)
                observed_by_route += n;
        }
        CHECK(observed > 0);
        CHECK(observed_by_route == observed);
    }
    CHECK(h2.metrics.count("idemgate_route_request_duration_seconds_count{route=\"/api/\"}"));
    CHECK(h2.metrics.count("idemgate_route_request_duration_seconds_count{route=\"/plain/\"}"));
    CHECK(h1.metrics == h2.metrics);
    if (h1.metrics != h2.metrics) {
        for (const auto& [series, n] : h1.metrics)
            MESSAGE("HTTP/1.1 " << series << " +" << n);
        for (const auto& [series, n] : h2.metrics)
            MESSAGE("HTTP/2   " << series << " +" << n);
    }

    // The access lines: one per request, the same fields and values. Each I/O thread writes its
    // own batch, so lines of requests on different connections may come in another order:
    // compared as sorted lists of serialized lines, members in name order.
    REQUIRE(h1.lines.size() == h2.lines.size());
    std::vector<std::string> a, b;
    for (const auto& line : h1.lines) {
        CHECK_FALSE(line.contains("proto"));
        CHECK(line.at("protocol") == "HTTP/1.1");
        a.push_back(boost::json::serialize(sorted(comparable(line, "-h1"))));
    }
    for (const auto& line : h2.lines) {
        CHECK(line.at("proto") == "h2");
        CHECK(line.at("protocol") == "HTTP/2");
        CHECK(line.contains("stream"));
        b.push_back(boost::json::serialize(sorted(comparable(line, "-h2"))));
    }
    std::sort(a.begin(), a.end());
    std::sort(b.begin(), b.end());
    for (std::size_t i = 0; i < a.size(); ++i)
        CHECK_MESSAGE(a[i] == b[i], "HTTP/1.1: " << a[i] << "\nHTTP/2:   " << b[i]);
}

TEST_SUITE_END();
