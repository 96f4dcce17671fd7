// SPDX-License-Identifier: Apache-2.0
// Timeouts where they belong: a route's own upstream_response and body_read, an upstream's, and
// the global ones under them (route over upstream over global); the keys that stay global; the
// lock_ttl check against each route's own upstream timeouts. Store-independent: memory only.
#include "gateway_fixture.hpp"

#include <chrono>
#include <doctest/doctest.h>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

// One test upstream behind two upstream entries: `fast` with the global timeouts, `patient`
// with a longer upstream_response of its own. The global upstream_response is short (300ms):
//   /slow/     -> fast, its own upstream_response 5s, guarded
//   /patient/  -> patient (5s from the upstream), no timeouts of its own
//   /upload/   -> fast, its own body_read 300ms
//   /          -> fast, nothing of its own, guarded
std::string timeouts_yaml(std::uint16_t upstream_port)
{
    const auto address = "\"127.0.0.1:" + std::to_string(upstream_port) + "\"";
    return "listen: \"127.0.0.1:0\"\nadmin_listen: \"127.0.0.1:0\"\nthreads: 1\n"
           "store:\n  type: memory\n"
           "upstreams:\n"
           "  fast: { address: " +
           address +
           " }\n"
           "  patient:\n    address: " +
           address +
           "\n    timeouts: { upstream_response: 5s }\n"
           "routes:\n"
           "  - path_prefix: \"/slow/\"\n    upstream: fast\n    timeouts: { upstream_response: 5s }\n"
           "    idempotency: { methods: [POST], lock_ttl: 60s }\n"
           "  - path_prefix: \"/patient/\"\n    upstream: patient\n"
           "  - path_prefix: \"/upload/\"\n    upstream: fast\n    timeouts: { body_read: 300ms }\n"
           "  - path_prefix: \"/\"\n    upstream: fast\n    idempotency: { methods: [POST], lock_ttl: 60s }\n"
           "timeouts:\n  upstream_response: 300ms\n  body_read: 10s\n";
}

using headers_type = std::vector<std::pair<std::string, std::string>>;

// A request the upstream answers after 1s: past the global 300ms, within the 5s overrides.
const headers_type one_second{{"X-Test-Delay-Ms", "1000"}};

// `idemgate --check` of `yaml`: its exit status and output.
std::pair<int, std::string> check_config(const std::string& yaml)
{
    temp_dir dir;
    auto path = dir.write_file("timeouts.yaml", yaml);
    child_process proc(gateway_bin(), {"--config", path, "--check"});
    auto status = proc.wait_exit(10s);
    std::string out;
    for (auto& l : proc.lines())
        out += l + "\n";
    return {status.value_or(-1), out};
}

} // namespace

TEST_SUITE_BEGIN("timeouts");

TEST_CASE("a route's own upstream_response outlasts the global one, which still bounds the other routes" *
          needs_store("memory"))
{
    test_upstream_process upstream;
    gateway_process gateway(timeouts_yaml(upstream.port()));

    auto slow = http_request(gateway.port(), "POST", "/slow/orders",
                             {{"Idempotency-Key", unique_key("slow-route")}, one_second[0]}, "{}", 10s);
    CHECK(slow.status == 201);

    // The route beside it has no timeouts of its own: the global 300ms ends its exchange (504),
    // and the key, sent and unanswered, is held as outcome_unknown (on_unknown_outcome: hold).
    const auto key = unique_key("global-route");
    auto cut =
        http_request(gateway.port(), "POST", "/orders", {{"Idempotency-Key", key}, one_second[0]}, "{}", 10s);
    CHECK(is_problem(cut, 504));
    CHECK(parse_object(cut.body)["status"] == 504);
    auto retry = http_request(gateway.port(), "POST", "/orders", {{"Idempotency-Key", key}}, "{}", 10s);
    CHECK(is_problem(retry, 409));
    CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
    CHECK(upstream.executions() == 2); // the slow route's and the cut one's; the retry never ran
}

TEST_CASE("an upstream's own upstream_response applies to a route that sets none" * needs_store("memory"))
{
    test_upstream_process upstream;
    gateway_process gateway(timeouts_yaml(upstream.port()));
    auto patient = http_request(gateway.port(), "POST", "/patient/orders", one_second, "{}", 10s);
    CHECK(patient.status == 201);
    // The route's own value beats its upstream's: /upload/ (upstream fast) keeps the global one.
    auto plain = http_request(gateway.port(), "POST", "/upload/orders", one_second, "{}", 10s);
    CHECK(is_problem(plain, 504));
}

TEST_CASE("a route's own body_read ends a slow body there and nowhere else" * needs_store("memory"))
{
    test_upstream_process upstream;
    gateway_process gateway(timeouts_yaml(upstream.port()));
    // Both bodies stall after 2 of their 10 bytes. The one on the route without a body_read of
    // its own (global 10s) is still being read when the other route's 300ms have ended its body.
    http_connection patient(gateway.port(), io_timeout);
    patient.send_raw("POST /orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n{}");
    http_connection stalled(gateway.port(), io_timeout);
    auto started = std::chrono::steady_clock::now();
    stalled.send_raw("POST /upload/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n{}");
    auto res = stalled.read_response();
    CHECK(is_problem(res, 408));
    CHECK(parse_object(res.body)["status"] == 408);
    CHECK(std::chrono::steady_clock::now() - started < 5s);
    patient.send_raw("12345678");
    auto whole = patient.read_response();
    CHECK(whole.status == 201);
    CHECK(upstream.executions() == 1);
}

TEST_CASE("timeouts that are global only are refused per route and per upstream, with their key paths" *
          needs_store("memory"))
{
    auto [status, out] =
        check_config("upstreams:\n  u:\n    address: \"127.0.0.1:9\"\n    timeouts: { idle: 5s, "
                     "upstream_connect: \"5x\" }\n"
                     "routes:\n  - path_prefix: \"/\"\n    upstream: u\n"
                     "    timeouts: { header_read: 1s, body_read: -1s, upstream_respond: 1s }\n");
    CHECK(status != 0);
    CHECK(out.find("upstreams.u.timeouts.idle: is global only") != std::string::npos);
    CHECK(out.find("upstreams.u.timeouts.upstream_connect: \"5x\" is not a duration") != std::string::npos);
    CHECK(out.find("routes[0].timeouts.header_read: is global only") != std::string::npos);
    CHECK(out.find("(set timeouts.header_read)") != std::string::npos);
    CHECK(out.find("routes[0].timeouts.body_read: \"-1s\" is negative") != std::string::npos);
    CHECK(out.find("routes[0].timeouts.upstream_respond: unknown key") != std::string::npos);
}

TEST_CASE("lock_ttl is checked against each route's own upstream timeouts" * needs_store("memory"))
{
    // Global timeouts make 2 x 1s + 2s + 1s = 5s: a lock_ttl of 10s covers them, not the 30s
    // upstream_response of the first route (2 x 1s + 30s + 1s = 33s).
    auto [status, out] = check_config(
        "upstreams:\n  u: { address: \"127.0.0.1:9\" }\n"
        "routes:\n"
        "  - path_prefix: \"/long/\"\n    upstream: u\n    timeouts: { upstream_response: 30s }\n"
        "    idempotency: { lock_ttl: 10s }\n"
        "  - path_prefix: \"/\"\n    upstream: u\n    idempotency: { lock_ttl: 10s }\n"
        "timeouts:\n  upstream_connect: 1s\n  upstream_response: 2s\n");
    CHECK(status == 0);
    CHECK(out.find("warning: routes[0].idempotency.lock_ttl: 10000ms is not above the route's 2 x "
                   "upstream_connect 1s + upstream_response 30s + 1s (33000ms)") != std::string::npos);
    CHECK(out.find("routes[1].idempotency.lock_ttl") == std::string::npos);
}

TEST_SUITE_END();
