// SPDX-License-Identifier: Apache-2.0
// Tenant quotas and per-tenant TTLs, and wait mode, against the real binary
// over both stores (the Redis run also shares one quota between two gateway instances).
#include "gateway_fixture.hpp"

#include <chrono>
#include <ctime>
#include <doctest/doctest.h>
#include <sstream>
#include <thread>

using namespace idemgate::test;

namespace {

double tenant_metric(gateway_fixture& f, const std::string& series)
{
    return idemgate::test::metric(f.gateway->admin_port(), series);
}

gateway_options tenant_options(const std::string& tenants)
{
    gateway_options options;
    options.idempotency_extra = "      tenant_header: X-Tenant-ID\n";
    options.top_level = "tenants:\n" + tenants;
    return options;
}

http_response post_as(std::uint16_t port, const std::string& tenant, const std::string& key,
                      std::vector<std::pair<std::string, std::string>> headers = {})
{
    headers.emplace_back("Idempotency-Key", key);
    headers.emplace_back("X-Tenant-ID", tenant);
    headers.emplace_back("Content-Type", "application/json");
    return gateway_request(port, "POST", "/api/orders", headers, R"({"amount":1})");
}

// Runs `n` calls of `call(i)` on their own threads at once and returns their answers in order.
template<class Call>
std::vector<http_response> concurrently(int n, Call call)
{
    std::vector<http_response> out(static_cast<std::size_t>(n));
    std::vector<std::string> errors(static_cast<std::size_t>(n));
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            try {
                out[static_cast<std::size_t>(i)] = call(i);
            } catch (const std::exception& e) {
                errors[static_cast<std::size_t>(i)] = e.what();
            }
        });
    for (auto& t : threads)
        t.join();
    for (const auto& e : errors)
        REQUIRE_MESSAGE(e.empty(), e);
    return out;
}

} // namespace

TEST_SUITE_BEGIN("tenants");

TEST_CASE("max_in_flight: the tenant's extra new key gets 429 with Retry-After; replays are never limited")
{
    gateway_fixture f(tenant_options("  acme: { max_in_flight: 2 }\n"));
    // A finished record of acme's, to replay while the quota is full.
    const std::string done_key = unique_key("done");
    REQUIRE(post_as(f.port(), "acme", done_key).status == 201);

    const std::string stem = unique_key("slow");
    std::vector<http_response> slow;
    std::jthread load([&] {
        slow = concurrently(2, [&](int i) {
            return post_as(f.port(), "acme", stem + "-" + std::to_string(i), {{"X-Test-Delay-Ms", "1500"}});
        });
    });
    REQUIRE(f.wait_for_executions(3)); // both slow requests reached the upstream
    auto third = post_as(f.port(), "acme", unique_key("third"));
    auto replay = post_as(f.port(), "acme", done_key);
    auto other_tenant = post_as(f.port(), "globex", unique_key("globex")); // no entry, no default
    load.join();

    CHECK(is_problem(third, 429));
    CHECK(parse_object(third.body)["type"] == "/.well-known/idempotency/problems/tenant-quota-exceeded");
    CHECK(third.header("retry-after") == "1");
    CHECK(replay.status == 201);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(other_tenant.status == 201);
    for (const auto& r : slow)
        CHECK(r.status == 201);
    CHECK(f.executions() == 4); // done, two slow, globex: the refused one never ran

    // The refused key was released, and the slots are free again: its retry runs now.
    auto retried = post_as(f.port(), "acme", unique_key("after"));
    CHECK(retried.status == 201);
    CHECK(tenant_metric(f, "idemgate_tenant_throttled_total{limit=\"max_in_flight\"}") == 1);
    CHECK(tenant_metric(f, "idemgate_requests_total{outcome=\"throttled\"}") == 1);
}

TEST_CASE("a refused key is released: the same key's retry runs once the quota allows")
{
    gateway_fixture f(tenant_options("  acme: { max_in_flight: 1 }\n"));
    std::jthread slow([&] { post_as(f.port(), "acme", unique_key("slow"), {{"X-Test-Delay-Ms", "800"}}); });
    REQUIRE(f.wait_for_executions(1));
    const std::string key = unique_key("retry");
    auto refused = post_as(f.port(), "acme", key);
    slow.join();
    CHECK(is_problem(refused, 429));
    CHECK(refused.header("idempotency-status") == "released");
    auto retried = post_as(f.port(), "acme", key);
    CHECK(retried.status == 201);
    CHECK(retried.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
}

TEST_CASE("new_keys_per_second: a burst beyond the rate gets 429; \"default\" applies to other tenants")
{
    gateway_fixture f(tenant_options("  default: { new_keys_per_second: 2 }\n"
                                     "  vip: { max_in_flight: 0 }\n"));
    int created = 0;
    int throttled = 0;
    std::string retry_after;
    for (int i = 0; i < 6; ++i) {
        auto r = post_as(f.port(), "initech", unique_key("rate"));
        if (r.status == 201)
            ++created;
        if (is_problem(r, 429)) {
            ++throttled;
            retry_after = r.header("retry-after");
        }
    }
    // Burst = the rate (2); six requests inside well under a second refill at most one more.
    CHECK(created >= 2);
    CHECK(created <= 3);
    CHECK(throttled == 6 - created);
    CHECK(retry_after == "1");
    // vip has its own entry without limits: never throttled.
    for (int i = 0; i < 6; ++i)
        CHECK(post_as(f.port(), "vip", unique_key("vip")).status == 201);
    CHECK(tenant_metric(f, "idemgate_tenant_throttled_total{limit=\"new_keys_per_second\"}") == throttled);
}

// The memory store is one process's: sharing it needs a Redis store.
TEST_CASE("two gateway instances share one tenant quota through Redis" * needs_store("redis", "cluster"))
{
    gateway_fixture f(tenant_options("  acme: { max_in_flight: 1 }\n"));
    auto second = f.start_another();
    std::jthread slow([&] { post_as(f.port(), "acme", unique_key("a"), {{"X-Test-Delay-Ms", "1000"}}); });
    REQUIRE(f.wait_for_executions(1));
    auto refused = post_as(second->port(), "acme", unique_key("b"));
    slow.join();
    CHECK(is_problem(refused, 429));
    CHECK(post_as(second->port(), "acme", unique_key("c")).status == 201);
    CHECK(f.executions() == 2);
}

TEST_CASE("a tenant's record_ttl overrides the route's")
{
    auto options = tenant_options("  acme: { record_ttl: 1h }\n");
    options.idempotency_extra += "      expose_expiry: true\n";
    gateway_fixture f(options);
    auto acme = post_as(f.port(), "acme", unique_key("ttl"));
    auto other = post_as(f.port(), "globex", unique_key("ttl"));
    REQUIRE(acme.status == 201);
    REQUIRE(other.status == 201);
    auto now = static_cast<long long>(std::time(nullptr));
    auto expires_in = [&](const http_response& r) {
        std::tm tm{};
        REQUIRE(strptime(r.header("idempotency-expires").c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm) !=
                nullptr);
        return static_cast<long long>(timegm(&tm)) - now;
    };
    CHECK(std::llabs(expires_in(acme) - 3600) <= 5);
    CHECK(std::llabs(expires_in(other) - 24 * 3600) <= 5);
}

TEST_CASE("tenants: bad values are config errors naming the key path")
{
    auto options = tenant_options("  acme: { max_in_flight: -1, new_keys_per_second: fast, lock_ttl: 0s, "
                                  "burst: 3 }\n");
    auto store = make_store(options);
    temp_dir dir;
    auto path = dir.write_file("bad.yaml", gateway_yaml(store, 9, 10, options));
    child_process proc(gateway_bin(), {"--config", path, "--check"});
    CHECK(proc.wait_exit(10s) == 1);
    auto out = proc.output();
    CHECK(out.find("tenants.acme.max_in_flight") != std::string::npos);
    CHECK(out.find("tenants.acme.new_keys_per_second") != std::string::npos);
    CHECK(out.find("tenants.acme.lock_ttl") != std::string::npos);
    CHECK(out.find("tenants.acme.burst: unknown key") != std::string::npos);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("wait-mode");

namespace {

gateway_options wait_options(const std::string& wait_timeout = "10s")
{
    gateway_options options;
    options.idempotency_extra = "      on_in_flight: wait\n      wait_timeout: " + wait_timeout + "\n";
    return options;
}

} // namespace

TEST_CASE("64 duplicates of a 1 s request: one execution, 64 identical answers, no 409")
{
    gateway_fixture f(wait_options());
    const std::string key = unique_key("wait64");
    std::vector<http_response> waiters;
    http_response first;
    std::jthread lead([&] {
        // 1 s: long enough that all 64 duplicates arrive while it is in flight, even under TSan
        // (at 300 ms a few arrived after it finished and were plain replays, not waits).
        first = f.post("/api/orders", key, R"({"n":1})", {{"X-Test-Delay-Ms", "1000"}});
    });
    REQUIRE(f.wait_for_executions(1));
    waiters = concurrently(64, [&](int) { return f.post("/api/orders", key, R"({"n":1})"); });
    lead.join();
    REQUIRE(first.status == 201);
    int replayed = 0;
    for (const auto& w : waiters) {
        CHECK(w.status == 201);
        CHECK(w.body == first.body);
        replayed += w.header("idempotent-replayed") == "true";
    }
    CHECK(replayed == 64);
    CHECK(f.executions() == 1);
    CHECK(tenant_metric(f, "idemgate_waits_total{result=\"settled\"}") == 64);
    CHECK(tenant_metric(f, "idemgate_waiting") == 0);
}

TEST_CASE("a duplicate that waits past wait_timeout gets 409 as in reject mode")
{
    gateway_fixture f(wait_options("200ms"));
    const std::string key = unique_key("waitlong");
    std::jthread lead([&] { f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1500"}}); });
    REQUIRE(f.wait_for_executions(1));
    auto started = std::chrono::steady_clock::now();
    auto dup = f.post("/api/orders", key, "{}");
    auto waited = std::chrono::steady_clock::now() - started;
    lead.join();
    CHECK(is_problem(dup, 409));
    CHECK(parse_object(dup.body)["type"] == "/.well-known/idempotency/problems/request-in-flight");
    CHECK(waited >= 150ms); // it did wait (a reject-mode 409 comes at once)
    CHECK(f.executions() == 1);
    CHECK(tenant_metric(f, "idemgate_waits_total{result=\"timed_out\"}") == 1);
}

TEST_CASE("a waiter whose first request fails (5xx, released) gets 409 released; its retry runs")
{
    gateway_fixture f(wait_options());
    const std::string key = unique_key("waitfail");
    http_response first;
    std::jthread lead([&] {
        first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "300"}, {"X-Test-Status", "500"}});
    });
    REQUIRE(f.wait_for_executions(1));
    auto dup = f.post("/api/orders", key, "{}");
    lead.join();
    CHECK(first.status == 500);
    CHECK(is_problem(dup, 409));
    CHECK(parse_object(dup.body)["type"] == "/.well-known/idempotency/problems/request-released");
    CHECK(dup.header("retry-after") == "1");
    CHECK(first.header("idempotency-status") == "released");
    CHECK(dup.header("idempotency-status") == "released");
    auto retry = f.post("/api/orders", key, "{}");
    CHECK(retry.status == 201);
    CHECK(f.executions() == 2);
}

TEST_CASE("wait mode: a duplicate with another body is a mismatch once the first finishes")
{
    gateway_fixture f(wait_options());
    const std::string key = unique_key("waitmismatch");
    std::jthread lead([&] { f.post("/api/orders", key, R"({"a":1})", {{"X-Test-Delay-Ms", "300"}}); });
    REQUIRE(f.wait_for_executions(1));
    auto dup = f.post("/api/orders", key, R"({"a":2})");
    lead.join();
    CHECK(is_problem(dup, 409));
    CHECK(parse_object(dup.body)["type"] == "/.well-known/idempotency/problems/idempotency-key-reused");
}

TEST_CASE("limits.max_waiting: duplicates beyond it get 503 too-many-waiting at once")
{
    auto options = wait_options();
    options.limits = "  max_waiting: 0\n";
    gateway_fixture f(options);
    const std::string key = unique_key("nowait");
    std::jthread lead([&] { f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "500"}}); });
    REQUIRE(f.wait_for_executions(1));
    auto dup = f.post("/api/orders", key, "{}");
    lead.join();
    CHECK(is_problem(dup, 503));
    CHECK(parse_object(dup.body)["type"] == "/.well-known/idempotency/problems/too-many-waiting");
    CHECK(dup.header("retry-after") == "1");
    CHECK(tenant_metric(f, "idemgate_waits_total{result=\"refused\"}") == 1);
}

TEST_CASE("wait mode across two gateway instances: the waiter on the other instance is woken" *
          needs_store("redis", "cluster"))
{
    gateway_fixture f(wait_options("5s"));
    auto second = f.start_another();
    const std::string key = unique_key("waitfleet");
    http_response first;
    std::jthread lead([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "300"}}); });
    REQUIRE(f.wait_for_executions(1));
    auto started = std::chrono::steady_clock::now();
    auto dup = gateway_request(second->port(), "POST", "/api/orders",
                               {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
    auto waited = std::chrono::steady_clock::now() - started;
    lead.join();
    CHECK(dup.status == 201);
    CHECK(dup.body == first.body);
    CHECK(dup.header("idempotent-replayed") == "true");
    CHECK(waited < 3s); // woken by the notification, not by the 5 s deadline
    CHECK(f.executions() == 1);
}

TEST_SUITE_END();
