// SPDX-License-Identifier: Apache-2.0
// A store that refuses writes, may evict, lost its data, or is full: named by /readyz, counted,
// new keys refused before anything runs, and back by itself. Each Redis fault is made on the
// test case's own redis-server; the cases that need one skip (with a message) on other stores.
#include "reload_support.hpp"

#include <csignal>
#include <cstdlib>
#include <doctest/doctest.h>
#include <string_view>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

struct readiness {
    int status = 0;
    std::string body;
};

readiness readyz(gateway_fixture& f)
{
    auto res = gateway_request(f.gateway->admin_port(), "GET", "/readyz");
    return {res.status, res.body};
}

// Waits (bounded) until /readyz answers `status` with `text` in its body.
bool readyz_says(gateway_fixture& f, int status, const std::string& text, milliseconds timeout = 5s)
{
    return poll_until(timeout, [&] {
        auto r = readyz(f);
        return r.status == status && r.body.find(text) != std::string::npos;
    });
}

void set_readiness(gateway_fixture& f, const std::string& from, const std::string& to)
{
    const auto path = f.gateway->config_path();
    const auto before = count_lines(*f.gateway, "\"msg\":\"configuration reloaded\"");
    write_text(path, replaced(read_text(path), "readiness:\n  store: " + from, "readiness:\n  store: " + to));
    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "\"msg\":\"configuration reloaded\"", before + 1));
}

// Waits (bounded) until the gateway's Redis connects have stayed the same for longer than the
// store's health interval (1 s): after the last connect the monitor runs its command check once
// more, and a case that changes the ACL must not race that check, which would find the refused
// command before the requests do (another condition, by design, than the one the case counts).
bool connects_settled(gateway_fixture& f)
{
    const auto admin = f.gateway->admin_port();
    auto last = metric(admin, "idemgate_redis_connects_total");
    auto since = std::chrono::steady_clock::now();
    return poll_until(
        15s,
        [&] {
            const auto now = metric(admin, "idemgate_redis_connects_total");
            if (now != last) {
                last = now;
                since = std::chrono::steady_clock::now();
            }
            return last > 0 && std::chrono::steady_clock::now() - since > 1500ms;
        },
        100ms);
}

// The fixture's gateway runs two threads, each with its own Redis connection.
constexpr double gateway_connections = 2;

// Waits (bounded) until every connection of the gateway is up and `connects` more connects than
// `before` happened: after a CLIENT KILL, a request must not race a connection's reconnect.
bool connections_up(gateway_fixture& f, double before, double connects)
{
    const auto admin = f.gateway->admin_port();
    return poll_until(10s, [&] {
        return metric(admin, "idemgate_redis_connects_total") >= before + connects &&
               metric(admin, "idemgate_redis_connections_up") == gateway_connections;
    });
}

gateway_options redis_health_options()
{
    gateway_options o;
    o.store_extra = "  refusal:\n    errors: 3\n    window: 10s\n";
    o.top_level = "readiness:\n  store: required\n";
    return o;
}

} // namespace

TEST_SUITE_BEGIN("store health");

// The Redis cases break a redis-server of their own (the fixture starts one per case).
TEST_CASE("a Redis that refuses completes: refusing after 3 errors, new keys refused unrun, back by itself" *
          needs_store("redis"))
{
    gateway_fixture f(redis_health_options());
    auto& redis = *f.store.redis;
    const auto recorded = unique_key("recorded");
    REQUIRE(f.post("/api/orders", recorded, "{}").status == 201);
    REQUIRE(connects_settled(f));

    // The gateway's user may reserve (SET) but not complete (the scripts).
    REQUIRE(redis.command({"ACL", "SETUSER", "default", "-evalsha", "-eval"}) == "+OK\r\n");
    for (int i = 0; i < 3; ++i)
        CHECK(f.post("/api/orders", unique_key("unrecorded"), "{}").status == 201); // ran, not recorded
    REQUIRE(f.wait_for_executions(4));
    REQUIRE_MESSAGE(readyz_says(f, 503, "refusing writes"), f.process().output());
    CHECK(readyz(f).body.find("NOPERM") != std::string::npos);

    // A new key is refused before anything runs; a recorded one still replays.
    auto refused = f.post("/api/orders", unique_key("while-refusing"), "{}");
    CHECK(is_problem(refused, 503));
    CHECK(parse_object(refused.body)["type"].as_string().ends_with("/store-unavailable"));
    CHECK(refused.header("retry-after") == "1");
    CHECK(f.post("/api/orders", recorded, "{}").header("idempotent-replayed") == "true");
    CHECK(f.executions() == 4);
    auto admin = f.gateway->admin_port();
    CHECK(metric(admin, "idemgate_store_condition{condition=\"refusing\"}") == 1);
    CHECK(metric(admin, "idemgate_redis_refusals_total{kind=\"noperm\"}") >= 3);
    CHECK(metric(admin, "idemgate_ready") == 0);

    // readiness.store: ignore keeps /readyz 200 and names the condition; new keys still get 503.
    set_readiness(f, "required", "ignore");
    auto ignored = readyz(f);
    CHECK(ignored.status == 200);
    CHECK(ignored.body.find("refusing writes") != std::string::npos);
    CHECK(is_problem(f.post("/api/orders", unique_key("ignored"), "{}"), 503));
    CHECK(f.executions() == 4);
    set_readiness(f, "ignore", "required");

    // The permission comes back: the probe write succeeds and the store serves again by itself.
    REQUIRE(redis.command({"ACL", "SETUSER", "default", "+@all"}) == "+OK\r\n");
    CHECK_MESSAGE(readyz_says(f, 200, "ready"), readyz(f).body);
    CHECK(logged(*f.gateway, "store accepts writes again"));
    CHECK(f.post("/api/orders", unique_key("after"), "{}").status == 201);
    CHECK(metric(admin, "idemgate_store_condition{condition=\"refusing\"}") == 0);
}

TEST_CASE(
    "a primary turned read-only replica (REPLICAOF): refusing and not ready, back after REPLICAOF NO ONE" *
    needs_store("redis"))
{
    gateway_fixture f(redis_health_options());
    auto& redis = *f.store.redis;
    // A primary nobody listens on: the server turns read-only and keeps its data.
    REQUIRE(redis.command({"REPLICAOF", "127.0.0.1", "1"}) == "+OK\r\n");
    for (int i = 0; i < 3; ++i)
        CHECK(is_problem(f.post("/api/orders", unique_key("readonly"), "{}"), 503));
    CHECK(f.executions() == 0);
    // Redis drops its clients when it turns replica: the command check after the reconnect may find
    // SET refused before three requests did, so either condition names it.
    REQUIRE_MESSAGE(readyz_says(f, 503, "READONLY"), readyz(f).body);
    auto admin = f.gateway->admin_port();
    CHECK(metric(admin, "idemgate_store_condition{condition=\"refusing\"}") +
              metric(admin, "idemgate_store_condition{condition=\"command_refused\"}") >=
          1);

    REQUIRE(redis.command({"REPLICAOF", "NO", "ONE"}) == "+OK\r\n");
    CHECK_MESSAGE(readyz_says(f, 200, "ready"), readyz(f).body);
    CHECK(f.post("/api/orders", unique_key("primary-again"), "{}").status == 201);
}

TEST_CASE(
    "an evicting maxmemory-policy: not ready after a reconnect, ready with allow_eviction and a warning" *
    needs_store("redis"))
{
    auto options = redis_health_options();
    gateway_fixture strict(options);
    auto& redis = *strict.store.redis;
    const auto admin = strict.gateway->admin_port();
    REQUIRE(connections_up(strict, 0, gateway_connections));
    const auto connects = metric(admin, "idemgate_redis_connects_total");
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory-policy", "volatile-ttl"}) == "+OK\r\n");
    redis.command({"CLIENT", "KILL", "TYPE", "normal"}); // the gateway reconnects and reads it again
    REQUIRE_MESSAGE(readyz_says(strict, 503, "evicting: maxmemory-policy volatile-ttl"), readyz(strict).body);
    CHECK(metric(admin, "idemgate_store_condition{condition=\"evicting\"}") == 1);
    REQUIRE(connections_up(strict, connects, gateway_connections));
    // Readiness only: requests are still served.
    auto served = strict.post("/api/orders", unique_key("evicting"), "{}");
    CHECK_MESSAGE(served.status == 201, served.body, "\n", strict.process().output());
    // Set back: ready again after the next reconnect.
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == "+OK\r\n");
    redis.command({"CLIENT", "KILL", "TYPE", "normal"});
    CHECK(readyz_says(strict, 200, "ready"));

    // The same Redis, evicting from the start, behind a gateway that allows it.
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}) == "+OK\r\n");
    options.redis_extra = "    allow_eviction: true\n";
    auto allowing = std::make_unique<gateway_process>(
        replaced(read_text(strict.gateway->config_path()), "    key_prefix: idemgate-test\n",
                 "    key_prefix: idemgate-test\n" + options.redis_extra));
    wait_until_ready(*allowing);
    CHECK(allowing->process().wait_for_line(
        [](const std::string& l) {
            return l.find("allowed by store.redis.allow_eviction") != std::string::npos;
        },
        5s));
    auto res = http_request(allowing->admin_port(), "GET", "/readyz");
    CHECK(res.status == 200);
    CHECK(res.body.find("note: maxmemory-policy allkeys-lru may evict records") != std::string::npos);
    CHECK(metric(allowing->admin_port(), "idemgate_redis_eviction_safe") == 0);
}

TEST_CASE(
    "a Redis that lost its data (FLUSHALL, a restart without persistence): counted and named by /readyz" *
    needs_store("redis"))
{
    gateway_fixture f(redis_health_options());
    auto& redis = *f.store.redis;
    auto admin = f.gateway->admin_port();
    // Written at start, without a TTL.
    REQUIRE(poll_until(5s, [&] { return redis.command({"EXISTS", "idemgate-test:marker"}) == ":1\r\n"; }));
    CHECK(redis.command({"PTTL", "idemgate-test:marker"}) == ":-1\r\n");
    CHECK(metric(admin, "idemgate_store_emptied_total") == 0);
    CHECK(metric(admin, "idemgate_redis_persistence") == 0); // the test servers keep nothing
    CHECK(readyz(f).body.find("note: no persistence") != std::string::npos);

    REQUIRE(redis.command({"FLUSHALL"}) == "+OK\r\n");
    REQUIRE(poll_until(5s, [&] { return metric(admin, "idemgate_store_emptied_total") == 1; }));
    auto after_flush = readyz(f);
    CHECK(after_flush.status == 200); // an event, not a condition
    CHECK(after_flush.body.find("emptied") != std::string::npos);
    CHECK(logged(*f.gateway, "redis lost its data"));

    // The marker is written again; a restart without persistence loses it again.
    REQUIRE(poll_until(5s, [&] { return redis.command({"EXISTS", "idemgate-test:marker"}) == ":1\r\n"; }));
    redis.stop();
    redis.start();
    CHECK(poll_until(5s, [&] { return metric(admin, "idemgate_store_emptied_total") == 2; }));
    CHECK(readyz_says(f, 200, "emptied"));
}

TEST_CASE("a full memory store: 503 store-full with Retry-After from its oldest record, not ready" *
          needs_store("memory"))
{
    gateway_options o;
    o.memory_max_entries = 2;
    o.record_ttl = "30s";
    o.top_level = "readiness:\n  store: required\n";
    gateway_fixture f(o);
    REQUIRE(f.post("/api/orders", unique_key("first"), "{}").status == 201);
    REQUIRE(f.post("/api/orders", unique_key("second"), "{}").status == 201);
    auto full = f.post("/api/orders", unique_key("third"), "{}");
    REQUIRE(is_problem(full, 503));
    CHECK(parse_object(full.body)["type"].as_string().ends_with("/store-full"));
    // The oldest record expires 30 s after it was completed: not the 1 s of store-unavailable.
    auto retry_after = std::stoi(full.header("retry-after"));
    CHECK(retry_after >= 25);
    CHECK(retry_after <= 30);
    CHECK(f.executions() == 2);
    auto r = readyz(f);
    CHECK(r.status == 503);
    CHECK(r.body.find("store memory full") != std::string::npos);
    CHECK(metric(f.gateway->admin_port(), "idemgate_store_condition{condition=\"full\"}") == 1);

    set_readiness(f, "required", "ignore");
    CHECK(readyz(f).status == 200);
    CHECK(is_problem(f.post("/api/orders", unique_key("fourth"), "{}"), 503));
    CHECK(f.executions() == 2);
}

TEST_CASE(
    "a lost Redis connection is connected again at once: a request right after a CLIENT KILL is served" *
    needs_store("redis"))
{
    gateway_fixture f(redis_health_options());
    auto& redis = *f.store.redis;
    REQUIRE(connections_up(f, 0, gateway_connections));
    // Each round kills both connections; the requests come while they reconnect, and wait for
    // that attempt instead of failing through a backoff (80 of 80 were 503 with one). A second
    // loss within a second meets the backoff, so the rounds are a second apart.
    for (int round = 0; round < 3; ++round) {
        if (round > 0)
            std::this_thread::sleep_for(1100ms);
        REQUIRE(redis.command({"CLIENT", "KILL", "TYPE", "normal"}).starts_with(":"));
        for (int i = 0; i < 2; ++i) {
            auto res = f.post("/api/orders", unique_key("after-kill"), "{}");
            CHECK_MESSAGE(res.status == 201, "round ", round, ": ", res.body);
        }
    }
    CHECK(f.executions() == 6);
}

TEST_SUITE_END();
