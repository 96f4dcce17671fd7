// SPDX-License-Identifier: Apache-2.0
// Late retries and re-executions: tombstones (routes[].idempotency.tombstone_ttl) refuse a retry
// after record_ttl; attempt_header tells the upstream which execution of a key it runs. Real
// idemgate, real test upstream, over each store.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

TEST_SUITE_BEGIN("late_retries");

TEST_CASE("tombstone_ttl: after record_ttl the retry gets 422 record-expired and is not run; another "
          "request under the key still gets the mismatch answer")
{
    gateway_options options;
    options.record_ttl = "1s";
    options.idempotency_extra = "      tombstone_ttl: 30s\n";
    gateway_fixture f(options);
    const auto key = unique_key("tombstone");
    auto first = f.post("/api/orders", key, R"({"amount":10})");
    REQUIRE(first.status == 201);
    const auto location = first.header("location");
    CHECK(f.post("/api/orders", key, R"({"amount":10})").header("idempotent-replayed") == "true");
    std::this_thread::sleep_for(1300ms); // the record expires, its tombstone stays

    auto late = f.post("/api/orders", key, R"({"amount":10})");
    CHECK(is_problem(late, 422));
    auto problem = parse_object(late.body);
    CHECK(problem["type"] == "/.well-known/idempotency/problems/record-expired");
    CHECK(problem["original_status"] == 201);
    CHECK(problem["original_time"].is_string());
    CHECK(problem["location"] == boost::json::string_view(location));
    CHECK(late.header("link") == "<" + location + ">; rel=\"original\"");
    CHECK(late.header("idempotency-status") == "expired");
    auto line = f.process().wait_for_line(
        [&](const std::string& l) {
            auto obj = parse_object(l);
            return obj["key"] == boost::json::string_view(key) && obj["status"] == 422;
        },
        5s);
    REQUIRE(line);
    CHECK(parse_object(*line)["outcome"] == "expired");

    auto other = f.post("/api/orders", key, R"({"amount":99})");
    CHECK(is_problem(other, 409));
    CHECK(parse_object(other.body)["type"] == "/.well-known/idempotency/problems/idempotency-key-reused");
    CHECK(other.header("idempotency-status") == "mismatch");
    CHECK(f.executions() == 1);

    // The refusals did not take the key: the tombstone still answers.
    CHECK(is_problem(f.post("/api/orders", key, R"({"amount":10})"), 422));
    CHECK(f.executions() == 1);
}

TEST_CASE("attempt_header: the upstream sees 1 on a key's first execution and 2 after a 5xx released it")
{
    gateway_options options;
    options.idempotency_extra = "      attempt_header: Idempotency-Attempt\n";
    gateway_fixture f(options);
    const auto key = unique_key("attempts");
    // A client's own value is replaced: only the gateway counts.
    auto failed = f.post("/api/orders", key, "{}", {{"X-Test-Status", "500"}, {"Idempotency-Attempt", "7"}});
    CHECK(failed.status == 500);
    CHECK(failed.header("idempotency-status") == "released");
    CHECK(parse_object(failed.body)["headers"].as_object()["idempotency-attempt"] == "1");
    auto retry = f.post("/api/orders", key, "{}");
    CHECK(retry.status == 201);
    CHECK(parse_object(retry.body)["headers"].as_object()["idempotency-attempt"] == "2");
    CHECK(f.executions() == 2);
    // A replay is no execution; another key starts at 1.
    CHECK(f.post("/api/orders", key, "{}").header("idempotent-replayed") == "true");
    auto fresh = f.post("/api/orders", unique_key("attempts-other"), "{}");
    CHECK(parse_object(fresh.body)["headers"].as_object()["idempotency-attempt"] == "1");
}
