// SPDX-License-Identifier: Apache-2.0
// /metrics in OpenMetrics 1.0 for a scraper that asks for it (Accept, as Prometheus sends it):
// the answer parsed by the format's reference parser (tests/gateway/check_openmetrics.py), the
// latency buckets carrying the trace IDs of sampled requests as exemplars, over HTTP/1.1 and
// HTTP/2 alike; without that Accept the Prometheus text format, unchanged.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>

using namespace idemgate::test;

namespace {

// What Prometheus 2.x sends.
const std::string prometheus_accept =
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
    "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";

// check_openmetrics.py on `text`: its exit status and output.
std::pair<int, std::string> parse_openmetrics(temp_dir& dir, const std::string& text)
{
    child_process parser("/usr/bin/python3", {IDEMGATE_SOURCE_DIR "/tests/gateway/check_openmetrics.py",
                                              dir.write_file("metrics.txt", text)});
    auto status = parser.wait_exit(60s);
    return {status ? *status : -1, parser.output()};
}

} // namespace

TEST_SUITE_BEGIN("openmetrics");

TEST_CASE("OpenMetrics on request: parsed by the reference parser, with sampled trace IDs as exemplars" *
          needs_store("memory"))
{
    gateway_options options;
    // Spans go nowhere (refused, counted as dropped): the exemplars need only the sampling.
    options.top_level = "http2:\n  cleartext: true\ntracing:\n  otlp_endpoint: \"http://127.0.0.1:" +
                        std::to_string(free_port()) + "/v1/traces\"\n  sample_ratio: 0.0\n";
    gateway_fixture g(options);
    const auto admin = g.gateway->admin_port();
    const std::string over_h1 = "0af7651916cd43dd8448eb211c80319c",
                      over_h2 = "4bf92f3577b34da6a3ce929d0e0e4736",
                      unsampled = "5ce929d0e0e4736a4bf92f3577b34da6";
    auto traceparent = [](const std::string& trace, const char* flags) {
        return "00-" + trace + "-00f067aa0ba902b7-" + flags;
    };
    REQUIRE(gateway_request(
                g.port(), "POST", "/api/orders",
                {{"Idempotency-Key", unique_key("om")}, {"traceparent", traceparent(over_h1, "01")}}, "{}")
                .status == 201);
    child_process curl("/usr/bin/curl", {"-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-H",
                                         "traceparent: " + traceparent(over_h2, "01"),
                                         "http://127.0.0.1:" + std::to_string(g.port()) + "/plain/x"});
    REQUIRE(curl.wait_exit(15s) == 0);
    REQUIRE(gateway_request(g.port(), "GET", "/plain/y", {{"traceparent", traceparent(unsampled, "00")}})
                .status == 201);

    auto om = http_request(admin, "GET", "/metrics", {{"Accept", prometheus_accept}});
    REQUIRE(om.status == 200);
    CHECK(om.header("content-type") == "application/openmetrics-text; version=1.0.0; charset=utf-8");
    CHECK(om.body.ends_with("\n# EOF\n"));
    CHECK(om.body.find("# TYPE idemgate_requests counter\n") != std::string::npos);
    CHECK(om.body.find("le=\"1.0\"") != std::string::npos);

    temp_dir dir;
    auto [status, parsed] = parse_openmetrics(dir, om.body);
    CHECK_MESSAGE(status == 0, parsed);
    INFO(parsed);
    auto exemplar_of = [&](const std::string& family, const std::string& route, const std::string& trace) {
        for (std::size_t at = 0;
             (at = parsed.find("{\"family\": \"" + family + "\"", at)) != std::string::npos; ++at) {
            auto line = parsed.substr(at, parsed.find('\n', at) - at);
            if (line.find("\"trace_id\": \"" + trace + "\"") != std::string::npos &&
                (route.empty() || line.find("\"route\": \"" + route + "\"") != std::string::npos))
                return true;
        }
        return false;
    };
    CHECK(exemplar_of("idemgate_route_request_duration_seconds", "/api/", over_h1));
    CHECK(exemplar_of("idemgate_route_request_duration_seconds", "/plain/", over_h2));
    CHECK(exemplar_of("idemgate_request_duration_seconds", "", over_h1));
    CHECK(exemplar_of("idemgate_request_duration_seconds", "", over_h2));
    CHECK(parsed.find(unsampled) == std::string::npos); // a trace nobody records links nowhere

    // The default stays the Prometheus text format, without exemplars; and the parser can
    // fail: it refuses that answer.
    auto text = http_request(admin, "GET", "/metrics");
    CHECK(text.header("content-type") == "text/plain; version=0.0.4; charset=utf-8");
    CHECK(text.body.find("# TYPE idemgate_requests_total counter\n") != std::string::npos);
    CHECK(text.body.find("# EOF") == std::string::npos);
    CHECK(text.body.find(" # {") == std::string::npos);
    CHECK(parse_openmetrics(dir, text.body).first != 0);
    CHECK(http_request(admin, "GET", "/metrics", {{"Accept", "text/plain;version=0.0.4"}})
              .header("content-type")
              .starts_with("text/plain"));
}

TEST_CASE("OpenMetrics over Redis: the store's families parse too, each declared once" * needs_store("redis"))
{
    gateway_fixture g;
    auto om = http_request(g.gateway->admin_port(), "GET", "/metrics", {{"Accept", prometheus_accept}});
    REQUIRE(om.status == 200);
    CHECK(om.body.find("# TYPE idemgate_redis_commands counter\n") != std::string::npos);
    temp_dir dir;
    auto [status, parsed] = parse_openmetrics(dir, om.body);
    CHECK_MESSAGE(status == 0, parsed);
}

TEST_SUITE_END();
