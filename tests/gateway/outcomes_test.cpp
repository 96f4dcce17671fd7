// SPDX-License-Identifier: Apache-2.0
// What the gateway does with each upstream answer (routes[].idempotency.on_status), what it tells
// the client (status_header), and what a replay carries (replay_drop_headers, a fresh Date):
// real idemgate, real test upstream, over each store.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <functional>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

using headers_type = std::vector<std::pair<std::string, std::string>>;

// IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT".
bool is_http_date(const std::string& value)
{
    return value.size() == 29 && value[3] == ',' && value.ends_with(" GMT") && value[19] == ':';
}

// The first access line whose fields satisfy `pred`, or an empty object after 5 s.
boost::json::object access_line(gateway_fixture& f, const std::function<bool(boost::json::object&)>& pred)
{
    auto line = f.process().wait_for_line(
        [&](const std::string& l) {
            auto obj = parse_object(l);
            return obj.contains("outcome") && pred(obj);
        },
        5s);
    return line ? parse_object(*line) : boost::json::object{};
}

boost::json::object access_line_of(gateway_fixture& f, const std::string& key, int status)
{
    return access_line(f, [&](boost::json::object& o) {
        return o["key"] == boost::json::string_view(key) && o["status"] == status;
    });
}

} // namespace

TEST_SUITE_BEGIN("outcomes");

TEST_CASE("on_status defaults: 429, 408 and 425 release the key and the retry runs; 401 is recorded")
{
    gateway_fixture f;
    long executions = 0;
    for (const char* status : {"429", "408", "425"}) {
        CAPTURE(status);
        const auto key = unique_key(std::string("not-processed-") + status);
        auto refused = f.post("/api/orders", key, "{}", {{"X-Test-Status", status}});
        CHECK(refused.status == std::stoi(status));
        CHECK(refused.header("idempotency-status") == "released");
        CHECK(f.executions() == ++executions);
        auto retry = f.post("/api/orders", key, "{}");
        CHECK(retry.status == 201);
        CHECK(retry.header("idempotent-replayed") != "true");
        CHECK(retry.header("idempotency-status") == "executed");
        CHECK(f.executions() == ++executions);
        auto line = access_line_of(f, key, std::stoi(status));
        CHECK(line["outcome"] == "released");
    }
    const auto key = unique_key("unauthorized");
    auto denied = f.post("/api/orders", key, "{}", {{"X-Test-Status", "401"}});
    CHECK(denied.status == 401);
    CHECK(denied.header("idempotency-status") == "executed");
    auto replay = f.post("/api/orders", key, "{}");
    CHECK(replay.status == 401);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.header("idempotency-status") == "replayed");
    CHECK(f.executions() == ++executions);

    CHECK(metric_reaching(f, R"(idemgate_upstream_outcomes_total{action="release",code="4xx"})", 3) == 3);
    CHECK(metric_reaching(f, R"(idemgate_upstream_outcomes_total{action="record",code="4xx"})", 1) == 1);
    CHECK(metric_reaching(f, R"(idemgate_upstream_outcomes_total{action="record",code="2xx"})", 3) == 3);
    CHECK(metric(f.gateway->admin_port(), R"(idemgate_upstream_outcomes_total{action="hold",code="5xx"})") ==
          0);
}

TEST_CASE("on_status configured: \"401\": release runs the retry; \"500\": hold answers 500 once, then 409")
{
    gateway_options options;
    options.idempotency_extra = "      on_status:\n        \"401\": release\n        \"500\": hold\n";
    gateway_fixture f(options);

    const auto flapping = unique_key("token-flapped");
    auto denied = f.post("/api/orders", flapping, "{}", {{"X-Test-Status", "401"}});
    CHECK(denied.status == 401);
    CHECK(denied.header("idempotency-status") == "released");
    auto retry = f.post("/api/orders", flapping, "{}");
    CHECK(retry.status == 201);
    CHECK(f.executions() == 2);

    const auto payment = unique_key("payment");
    auto crashed = f.post("/api/orders", payment, R"({"amount":10})", {{"X-Test-Status", "500"}});
    CHECK(crashed.status == 500); // the client gets the upstream's answer
    CHECK(crashed.header("idempotency-status") == "held");
    CHECK(crashed.header("x-upstream-execution") == "3");
    auto duplicate = f.post("/api/orders", payment, R"({"amount":10})");
    CHECK(is_problem(duplicate, 409));
    CHECK(parse_object(duplicate.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
    CHECK(duplicate.header("idempotency-status") == "held");
    CHECK_FALSE(duplicate.has_header("retry-after")); // a retry cannot succeed until it is released
    CHECK(f.executions() == 3);
    // Another 5xx still releases: only the code was configured.
    const auto other = unique_key("unavailable");
    CHECK(f.post("/api/orders", other, "{}", {{"X-Test-Status", "503"}}).header("idempotency-status") ==
          "released");
    CHECK(f.post("/api/orders", other, "{}").status == 201);
    CHECK(f.executions() == 5);

    CHECK(access_line_of(f, payment, 500)["outcome"] == "held");
    CHECK(access_line_of(f, payment, 409)["outcome"] == "conflict");
    CHECK(metric_reaching(f, R"(idemgate_upstream_outcomes_total{action="hold",code="5xx"})", 1) == 1);
    CHECK(metric_reaching(f, R"(idemgate_upstream_outcomes_total{action="release",code="4xx"})", 1) == 1);
}

TEST_CASE("Idempotency-Status on every kind of answer to a keyed request, and Date on the gateway's own")
{
    gateway_options options;
    options.limits = "  max_request_body: 1KiB\n";
    gateway_fixture f(options);
    const auto key = unique_key("told");

    // An upstream's own field of that name never reaches the client or the record.
    auto first = f.post("/api/orders", key, "{}", {{"X-Test-Header", "Idempotency-Status: bogus"}});
    REQUIRE(first.status == 201);
    CHECK(first.headers.count("idempotency-status") == 1);
    CHECK(first.header("idempotency-status") == "executed");
    CHECK(is_http_date(first.header("date"))); // the test upstream sends none: the gateway adds it
    auto replay = f.post("/api/orders", key, "{}");
    CHECK(replay.headers.count("idempotency-status") == 1);
    CHECK(replay.header("idempotency-status") == "replayed");

    auto mismatch = f.post("/api/orders", key, R"({"other":1})");
    CHECK(is_problem(mismatch, 409));
    CHECK(mismatch.header("idempotency-status") == "mismatch");
    CHECK(is_http_date(mismatch.header("date")));

    auto invalid = f.post("/tenant/orders", key, "{}"); // the tenant header is missing
    CHECK(is_problem(invalid, 400));
    CHECK(invalid.header("idempotency-status") == "rejected");
    CHECK(is_http_date(invalid.header("date")));
    auto named = f.post("/api/orders", unique_key("hop"), "{}", {{"Connection", "Idempotency-Key"}});
    CHECK(is_problem(named, 400));
    CHECK(named.header("idempotency-status") == "rejected");
    // Refused by the connection before the filter ran: a body over limits.max_request_body.
    auto too_large = f.post("/api/orders", unique_key("large"), std::string(2048, 'x'));
    CHECK(is_problem(too_large, 413));
    CHECK(too_large.header("idempotency-status") == "rejected");
    CHECK(is_http_date(too_large.header("date")));
    auto too_large_unkeyed = f.post("/api/orders", "", std::string(2048, 'x'));
    CHECK(is_problem(too_large_unkeyed, 413));
    CHECK_FALSE(too_large_unkeyed.has_header("idempotency-status"));

    // Not sent (connection refused): released, and the gateway's 502 carries Date.
    auto down = f.post("/down/orders", unique_key("down"), "{}");
    CHECK(is_problem(down, 502));
    CHECK(down.header("idempotency-status") == "released");
    CHECK(is_http_date(down.header("date")));

    // A key where nothing is guarded: a method not listed, a route without idempotency.
    auto get = gateway_request(f.port(), "GET", "/api/orders", {{"Idempotency-Key", unique_key("get")}});
    CHECK(get.status == 201);
    CHECK(get.header("idempotency-status") == "ignored");
    auto plain = f.post("/plain/orders", unique_key("plain"), "{}");
    CHECK(plain.status == 201);
    CHECK(plain.header("idempotency-status") == "ignored");

    // No key, no word about it; a route that does not match has no status_header to say it with.
    auto unkeyed = f.post("/api/orders", "", "{}");
    CHECK(unkeyed.status == 201);
    CHECK_FALSE(unkeyed.has_header("idempotency-status"));
    auto no_route = f.post("/nowhere", unique_key("lost"), "{}");
    CHECK(is_problem(no_route, 404));
    CHECK_FALSE(no_route.has_header("idempotency-status"));
    CHECK(is_http_date(no_route.header("date")));
    CHECK(is_http_date(gateway_request(f.gateway->admin_port(), "GET", "/healthz").header("date")));
}

TEST_CASE("replays leave out replay_drop_headers and carry a fresh Date, from the store and the local tier")
{
    gateway_options options;
    options.store_extra = "  local_tier:\n    max_bytes: 1MiB\n    max_age: 10s\n";
    gateway_fixture f(options);
    const auto key = unique_key("rate-limited");
    const std::string recorded_date = "Mon, 01 Jan 2001 00:00:00 GMT";
    const headers_type upstream_fields{
        {"X-Test-Header", "Date: " + recorded_date},   {"X-Test-Header", "Retry-After: 30"},
        {"X-Test-Header", "X-RateLimit-Remaining: 4"}, {"X-Test-Header", "RateLimit: limit=10, remaining=4"},
        {"X-Test-Header", "RateLimit-Policy: 10;w=1"}, {"X-Test-Header", "X-Order-Ref: A-17"}};
    auto first = f.post("/api/orders", key, "{}", upstream_fields);
    REQUIRE(first.status == 201);
    // The first answer is the upstream's, as it came.
    CHECK(first.header("date") == recorded_date);
    CHECK(first.header("retry-after") == "30");
    CHECK(first.header("x-ratelimit-remaining") == "4");

    auto tier_hits = [&] {
        return metric(f.gateway->admin_port(), R"(idemgate_local_tier_lookups_total{result="hit"})");
    };
    // The first replay reads the store (and copies the record into the tier); later ones come
    // from the tier. The gateway has two threads: replay on one connection so each copy is used.
    http_connection conn(f.port(), io_timeout);
    const headers_type keyed{{"Idempotency-Key", key}, {"Content-Type", "application/json"}};
    auto from_store = conn.request("POST", "/api/orders", keyed, "{}");
    // With the Redis store, the confirmation of the start-up subscription to removals empties
    // every tier (removals before it may have been missed); on a loaded machine it can come after
    // the first replay's copy, and the next replay reads the store again. Replayed until one came
    // from the tier (bounded): the first of them is the one checked.
    http_response from_tier;
    for (int attempt = 0; attempt < 20 && tier_hits() == 0; ++attempt) {
        if (attempt > 0)
            std::this_thread::sleep_for(50ms); // the clear is a posted task in each thread
        from_tier = conn.request("POST", "/api/orders", keyed, "{}");
    }
    CHECK(tier_hits() == 1);
    for (const auto* replay : {&from_store, &from_tier}) {
        CHECK(replay->status == 201);
        CHECK(replay->header("idempotent-replayed") == "true");
        CHECK(replay->header("idempotency-status") == "replayed");
        CHECK(replay->header("x-order-ref") == "A-17");
        CHECK(replay->header("location") == first.header("location"));
        for (const char* dropped :
             {"retry-after", "x-ratelimit-remaining", "ratelimit", "ratelimit-policy"}) {
            CAPTURE(dropped);
            CHECK_FALSE(replay->has_header(dropped));
        }
        CHECK(replay->headers.count("date") == 1);
        CHECK(is_http_date(replay->header("date")));
        CHECK(replay->header("date") != recorded_date);
        CHECK(replay->body == first.body);
    }
    CHECK(f.executions() == 1);
}
