// SPDX-License-Identifier: Apache-2.0
// Reconciliation of held keys (routes[].idempotency.reconcile): the gateway asks the upstream
// whether a held request took effect, and completes or releases the key: real idemgate, real
// test upstream (its /__lookup/<status>/... answers), over each store.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

// A route whose 500s hold the key, probing `path` (after 100ms, then every `every`).
gateway_options reconciling(const std::string& path, const std::string& every = "300ms",
                            const std::string& give_up_after = "10m")
{
    gateway_options options;
    options.idempotency_extra = "      on_status:\n        \"500\": hold\n"
                                "      reconcile:\n        path: \"" +
                                path + "\"\n        after: 100ms\n        every: " + every +
                                "\n        give_up_after: " + give_up_after + "\n";
    return options;
}

// The test upstream's lookups: target -> ["<Idempotency-Key> <X-Tenant>", ...].
boost::json::object lookups(gateway_fixture& f)
{
    auto res = gateway_request(f.upstream.port(), "GET", "/__lookups");
    return parse_object(res.body);
}

std::size_t lookup_count(gateway_fixture& f, const std::string& target)
{
    auto all = lookups(f);
    const auto* list = all.if_contains(target);
    return list && list->is_array() ? list->as_array().size() : 0;
}

// Retries `key` until the answer is no longer 409 (the key still held), at most 5 s.
http_response retry_until_settled(gateway_fixture& f, const std::string& key, const std::string& body)
{
    auto deadline = std::chrono::steady_clock::now() + 5s;
    auto res = f.post("/api/orders", key, body);
    while (res.status == 409 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(50ms);
        res = f.post("/api/orders", key, body);
    }
    return res;
}

} // namespace

TEST_SUITE_BEGIN("reconcile");

TEST_CASE("reconcile found: a held key completes with the probe's answer, and the retry replays it")
{
    gateway_fixture f(reconciling("/__lookup/200/{key}"));
    const auto key = unique_key("paid");
    auto crashed = f.post("/api/orders", key, R"({"amount":10})", {{"X-Test-Status", "500"}});
    CHECK(crashed.status == 500);
    CHECK(crashed.header("idempotency-status") == "held");
    CHECK(f.post("/api/orders", key, R"({"amount":10})").status == 409); // held until the probe

    auto replay = retry_until_settled(f, key, R"({"amount":10})");
    CHECK(replay.status == 200);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.header("idempotency-status") == "reconciled");
    CHECK(replay.header("x-lookup") == "1");
    CHECK_FALSE(replay.has_header("idemgate-reconciled"));
    CHECK(parse_object(replay.body)["lookup"] == boost::json::string_view("/__lookup/200/" + key));
    CHECK(f.executions() == 1); // the order endpoint ran once; the lookup is not an execution
    // Once found, the key is no longer probed; the probe carried the key.
    auto probes = lookups(f)["/__lookup/200/" + key].as_array();
    CHECK(probes.size() == 1);
    CHECK(probes[0] == boost::json::string_view(key + " "));
    auto again = f.post("/api/orders", key, R"({"amount":10})");
    CHECK(again.header("idempotency-status") == "reconciled");
    CHECK(again.body == replay.body);
    auto line = f.process().wait_for_line([&](const std::string& l) {
        auto o = parse_object(l);
        return o["key"] == boost::json::string_view(key) && o["outcome"] == "reconciled";
    });
    CHECK(line.has_value());
    CHECK(metric_reaching(f, R"(idemgate_reconcile_total{result="found"})", 1) == 1);
}

TEST_CASE("reconcile not_found: the held key is released and the retry executes")
{
    gateway_fixture f(reconciling("/__lookup/404/{key}"));
    const auto key = unique_key("lost");
    CHECK(f.post("/api/orders", key, "{}", {{"X-Test-Status", "500"}}).header("idempotency-status") ==
          "held");
    auto retry = retry_until_settled(f, key, "{}");
    CHECK(retry.status == 201);
    CHECK(retry.header("idempotency-status") == "executed");
    CHECK(f.executions() == 2);
    CHECK(lookup_count(f, "/__lookup/404/" + key) == 1);
    CHECK(metric_reaching(f, R"(idemgate_reconcile_total{result="not_found"})", 1) == 1);
}

TEST_CASE("reconcile: an answer neither found nor not_found is asked again every `every` until "
          "give_up_after; then the key stays held")
{
    gateway_fixture f(reconciling("/__lookup/503/{key}", "200ms", "1s"));
    const auto key = unique_key("unsure");
    CHECK(f.post("/api/orders", key, "{}", {{"X-Test-Status", "500"}}).status == 500);
    CHECK(metric_reaching(f, R"(idemgate_reconcile_total{result="gave_up"})", 1) == 1);
    auto asked = lookup_count(f, "/__lookup/503/" + key);
    // Due at 100ms, then every 200ms before 1s: 5 probes (one late tick may cost one).
    CHECK(asked >= 4);
    CHECK(asked <= 6);
    CHECK(metric(f.gateway->admin_port(), R"(idemgate_reconcile_total{result="retry"})") == asked);
    std::this_thread::sleep_for(500ms);
    CHECK(lookup_count(f, "/__lookup/503/" + key) == asked); // given up: no more probes
    auto retry = f.post("/api/orders", key, "{}");
    CHECK(is_problem(retry, 409));
    CHECK(f.executions() == 1);
}

TEST_CASE("reconcile: {json:<pointer>} takes a field of the held request's body, percent-encoded")
{
    gateway_fixture f(reconciling("/__lookup/200/by-ref/{json:/client_ref}"));
    const auto key = unique_key("ref");
    const std::string body = R"({"client_ref":"A B/7","amount":3})";
    CHECK(f.post("/api/orders", key, body, {{"X-Test-Status", "500"}}).status == 500);
    auto replay = retry_until_settled(f, key, body);
    CHECK(replay.status == 200);
    CHECK(replay.header("idempotency-status") == "reconciled");
    CHECK(lookup_count(f, "/__lookup/200/by-ref/A%20B%2F7") == 1);
    CHECK(f.executions() == 1);
}

// A memory store is one process's: there is no fleet to share it.
TEST_CASE("reconcile: two gateways on one store probe a held key once per interval" *
          needs_store("redis", "cluster"))
{
    gateway_fixture f(reconciling("/__lookup/503/{key}", "500ms"));
    auto second = f.start_another();
    const auto key = unique_key("fleet");
    auto started = std::chrono::steady_clock::now();
    CHECK(f.post("/api/orders", key, "{}", {{"X-Test-Status", "500"}}).status == 500);
    std::this_thread::sleep_for(2600ms - (std::chrono::steady_clock::now() - started));
    // Due at 100ms, then every 500ms: 6 probes by 2.6s from one prober; two uncoordinated ones
    // would send about twice that.
    auto asked = lookup_count(f, "/__lookup/503/" + key);
    CHECK(asked >= 4);
    CHECK(asked <= 7);
    double first = metric(f.gateway->admin_port(), R"(idemgate_reconcile_total{result="retry"})");
    double other = metric(second->admin_port(), R"(idemgate_reconcile_total{result="retry"})");
    CHECK(first + other == static_cast<double>(asked));
}

TEST_SUITE_END();
