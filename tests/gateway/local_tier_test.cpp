// SPDX-License-Identifier: Apache-2.0
// The local tier (store.local_tier): finished records answered from the gateway
// process without a store round trip, byte for byte as the store path answers them, never past
// the record's TTL or max_age, dropped everywhere when an operator removes the record, bounded.
// Runs over every store (IDEMGATE_TEST_STORE); the fleet case needs a shared store.
#include "gateway_fixture.hpp"

#include <chrono>
#include <doctest/doctest.h>
#include <functional>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

const std::string tier_admin_token = "tier-admin-token-0123456789";

// `admit`: "complete" (the copy is made when the first execution completes, so each rule is
// tested from the first request on), "replay" (the default) or "" (the key left out).
gateway_options tier_options(const std::string& max_bytes = "1MiB", const std::string& max_age = "10s",
                             const std::string& admit = "complete")
{
    gateway_options options;
    options.store_extra = "  local_tier:\n    max_bytes: " + max_bytes + "\n    max_age: " + max_age + "\n";
    if (!admit.empty())
        options.store_extra += "    admit: " + admit + "\n";
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", tier_admin_token);
    return options;
}

double reserves(const gateway_process& g)
{
    return metric(g.admin_port(), "idemgate_store_duration_seconds_count{op=\"reserve\"}");
}

double hits(const gateway_process& g)
{
    return metric(g.admin_port(), "idemgate_local_tier_lookups_total{result=\"hit\"}");
}

// A keep-alive client: every request on one connection, so on one gateway thread (whose tier
// holds the copy). Requests over fresh connections may land on any thread.
struct one_connection {
    explicit one_connection(std::uint16_t port) : client(port, io_timeout) {}
    http_response post(const std::string& key, const std::string& body,
                       std::vector<std::pair<std::string, std::string>> headers = {})
    {
        headers.emplace_back("Idempotency-Key", key);
        headers.emplace_back("Content-Type", "application/json");
        return client.request("POST", "/api/orders", headers, body);
    }
    http_connection client;
};

// The raw answer without the fields every answer carries its own value of (its request's ID,
// a fresh Date), so two replays are byte-identical apart from them.
std::string without_request_id(const std::string& raw)
{
    return without_fields(raw, {"X-Request-Id", "Date"});
}

// Polls `pred` (what another thread or gateway does asynchronously) for up to 5 s.
bool eventually_true(const std::function<bool()>& pred)
{
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred())
            return true;
        std::this_thread::sleep_for(20ms);
    }
    return pred();
}

std::string admin_delete(const gateway_process& g, const std::string& key)
{
    auto res = http_request(g.admin_port(), "DELETE", "/admin/v1/records?key=" + key,
                            {{"Authorization", "Bearer " + tier_admin_token}}, {});
    return std::to_string(res.status);
}

} // namespace

TEST_SUITE_BEGIN("local-tier");

TEST_CASE("local tier: a replay is answered from the process, byte for byte as from the store")
{
    // The same key replayed by a gateway without the tier and by one with it.
    gateway_fixture plain;
    gateway_fixture tiered(tier_options());
    for (auto* f : {&plain, &tiered}) {
        one_connection c(f->port());
        const auto key = unique_key("tier-bytes");
        auto first = c.post(key, R"({"item":"book"})");
        REQUIRE(first.status == 201);
        auto before = reserves(*f->gateway);
        auto one = c.post(key, R"({"item":"book"})");
        auto two = c.post(key, R"({"item":"book"})");
        CHECK(one.header("x-request-id") != two.header("x-request-id"));
        CHECK(without_request_id(one.raw) == without_request_id(two.raw));
        CHECK(one.header("idempotent-replayed") == "true");
        CHECK(one.body == first.body);
        CHECK(f->executions() == 1);
        if (f == &tiered) {
            // Both replays from the copy the first execution left: no reserve reached the store.
            CHECK(reserves(*f->gateway) == before);
            CHECK(hits(*f->gateway) == 2);
        } else {
            CHECK(reserves(*f->gateway) == before + 2);
        }
    }
}

TEST_CASE("local tier: by default a record enters at its first replay, not when it completes")
{
    gateway_fixture f(tier_options("1MiB", "10s", "")); // admit left out: replay
    one_connection c(f.port());
    auto tier_bytes = [&] { return metric(f.gateway->admin_port(), "idemgate_local_tier_bytes"); };
    // A key executed once and never retried leaves nothing in the tier.
    const auto key = unique_key("tier-admit");
    auto first = c.post(key, R"({"item":"pen"})");
    REQUIRE(first.status == 201);
    CHECK(tier_bytes() == 0);
    auto before = reserves(*f.gateway);
    auto one = c.post(key, R"({"item":"pen"})"); // from the store, which makes the copy
    CHECK(tier_bytes() > 0);
    auto two = c.post(key, R"({"item":"pen"})"); // from the copy
    CHECK(one.header("idempotent-replayed") == "true");
    CHECK(two.header("idempotent-replayed") == "true");
    CHECK(without_request_id(one.raw) == without_request_id(two.raw));
    CHECK(two.body == first.body);
    CHECK(reserves(*f.gateway) == before + 1);
    CHECK(hits(*f.gateway) == 1);
    CHECK(f.executions() == 1);
}

TEST_CASE("local tier: HTTP/1.0 keep-alive and Connection: close get the framing Beast gives them")
{
    gateway_fixture f(tier_options());
    one_connection c(f.port());
    const auto key = unique_key("tier-framing");
    REQUIRE(c.post(key, "{}").status == 201);
    const std::string request = "POST /api/orders HTTP/1.0\r\nHost: x\r\nIdempotency-Key: " + key +
                                "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n";
    c.client.send_raw(request + "Connection: keep-alive\r\n\r\n{}");
    auto old = c.client.read_response();
    CHECK(old.raw.rfind("HTTP/1.0 201 ", 0) == 0);
    CHECK(old.header("connection") == "keep-alive");
    CHECK(old.header("idempotent-replayed") == "true");
    auto close = c.post(key, "{}", {{"Connection", "close"}});
    CHECK(close.raw.rfind("HTTP/1.1 201 ", 0) == 0);
    CHECK(close.header("connection") == "close");
    CHECK(close.header("idempotent-replayed") == "true");
    CHECK(hits(*f.gateway) == 2);
}

TEST_CASE("local tier: another body under a cached key is still a mismatch, decided by the store")
{
    gateway_fixture f(tier_options());
    one_connection c(f.port());
    const auto key = unique_key("tier-mismatch");
    REQUIRE(c.post(key, R"({"n":1})").status == 201);
    auto other = c.post(key, R"({"n":2})");
    CHECK(is_problem(other, 409));
    CHECK(parse_object(other.body)["type"] == "/.well-known/idempotency/problems/idempotency-key-reused");
    CHECK(f.executions() == 1);
}

TEST_CASE("local tier: a copy never outlives its record's TTL")
{
    gateway_options options = tier_options("1MiB", "1h");
    options.record_ttl = "1s";
    gateway_fixture f(options);
    one_connection c(f.port());
    const auto key = unique_key("tier-ttl");
    REQUIRE(c.post(key, "{}").status == 201);
    CHECK(c.post(key, "{}").header("idempotent-replayed") == "true");
    std::this_thread::sleep_for(1300ms); // past record_ttl (the record's own expiry, not a race)
    auto after = c.post(key, "{}");
    CHECK(after.status == 201);
    CHECK(after.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
}

TEST_CASE("local tier: max_age bounds a copy; the store still replays after it")
{
    // max_age long enough that the replay right after the first answer falls inside it even on
    // a loaded machine: only the wait below is meant to pass it.
    gateway_fixture f(tier_options("1MiB", "2s"));
    one_connection c(f.port());
    const auto key = unique_key("tier-age");
    REQUIRE(c.post(key, "{}").status == 201);
    CHECK(c.post(key, "{}").header("idempotent-replayed") == "true");
    CHECK(hits(*f.gateway) == 1);
    std::this_thread::sleep_for(2200ms); // past max_age
    auto before = reserves(*f.gateway);
    auto late = c.post(key, "{}");
    CHECK(late.header("idempotent-replayed") == "true");
    CHECK(reserves(*f.gateway) == before + 1); // asked the store, which replayed and re-cached
    CHECK(hits(*f.gateway) == 1);
    // The store's replay and the tier's copy of it, byte for byte.
    auto cached = c.post(key, "{}");
    CHECK(hits(*f.gateway) == 2);
    CHECK(!cached.header("x-request-id").empty());
    CHECK(without_request_id(cached.raw) == without_request_id(late.raw));
    CHECK(f.executions() == 1);
}

TEST_CASE("local tier: in-flight keys are never answered from the tier")
{
    gateway_fixture f(tier_options());
    const auto key = unique_key("tier-inflight");
    http_response first;
    std::jthread lead([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "400"}}); });
    REQUIRE(f.wait_for_executions(1));
    CHECK(is_problem(f.post("/api/orders", key, "{}"), 409));
    lead.join();
    CHECK(first.status == 201);
    CHECK(hits(*f.gateway) == 0);
}

TEST_CASE("local tier: bounded by max_bytes, least recently used copies evicted")
{
    // 2 threads: 8 KiB each; ~2 KiB answers (the upstream echoes the body).
    gateway_fixture f(tier_options("16KiB"));
    one_connection c(f.port());
    const std::string body = "{\"pad\":\"" + std::string(1800, 'x') + "\"}";
    std::vector<std::string> keys;
    for (int i = 0; i < 12; ++i) {
        keys.push_back(unique_key("tier-evict"));
        REQUIRE(c.post(keys.back(), body).status == 201);
    }
    CHECK(metric(f.gateway->admin_port(), "idemgate_local_tier_evictions_total") >= 6);
    CHECK(metric(f.gateway->admin_port(), "idemgate_local_tier_bytes") <= 16 * 1024);
    // Every key still replays (evicted ones from the store).
    for (const auto& k : keys)
        CHECK(c.post(k, body).header("idempotent-replayed") == "true");
    CHECK(f.executions() == 12);
}

TEST_CASE("local tier: an operator's DELETE drops the copy in every thread and every gateway")
{
    gateway_fixture f(tier_options());
    std::unique_ptr<gateway_process> second;
    if (f.store.persistent())
        second = f.start_another();
    const auto key = unique_key("tier-purge");
    one_connection a(f.port());
    REQUIRE(a.post(key, "{}").status == 201);
    CHECK(a.post(key, "{}").header("idempotent-replayed") == "true");
    std::unique_ptr<one_connection> b;
    if (second) {
        b = std::make_unique<one_connection>(second->port());
        CHECK(b->post(key, "{}").header("idempotent-replayed") == "true"); // read from the store
        CHECK(b->post(key, "{}").header("idempotent-replayed") == "true"); // from its tier
        CHECK(hits(*second) == 1);
    }
    CHECK(hits(*f.gateway) == 1);

    CHECK(admin_delete(*f.gateway, key) == "204");
    // The removal reaches the other threads and gateways asynchronously (a posted task; Redis
    // pub/sub): the next request runs the key again once it has.
    CHECK(eventually_true([&] { return metric(f.gateway->admin_port(), "idemgate_local_tier_bytes") == 0; }));
    auto again = a.post(key, "{}");
    CHECK(again.status == 201);
    CHECK(again.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
    if (second) {
        CHECK(admin_delete(*f.gateway, key) == "204");
        CHECK(
            eventually_true([&] { return metric(second->admin_port(), "idemgate_local_tier_bytes") == 0; }));
        auto there = b->post(key, "{}");
        CHECK(there.status == 201);
        CHECK(there.header("idempotent-replayed") != "true");
        CHECK(f.executions() == 3);
    }
}

TEST_CASE("local tier: --check names store.local_tier keys")
{
    temp_dir dir;
    auto check = [&](const std::string& tier) {
        auto path = dir.write_file("c.yaml", "upstreams:\n  orders: { address: \"127.0.0.1:8081\" }\n"
                                             "routes:\n  - path_prefix: /api/\n    upstream: orders\n"
                                             "store:\n  local_tier:\n" +
                                                 tier);
        child_process proc(gateway_bin(), {"--config", path, "--check"});
        auto status = proc.wait_exit(10s);
        return std::pair{status.value_or(-1), proc.output()};
    };
    CHECK(check("    max_bytes: 64MiB\n    max_age: 10s\n").first == 0);
    CHECK(check("    max_bytes: 64MiB\n    admit: complete\n").first == 0);
    auto [bad_admit, out3] = check("    max_bytes: 64MiB\n    admit: never\n");
    CHECK(bad_admit == 1);
    CHECK_MESSAGE(out3.find("store.local_tier.admit") != std::string::npos, out3);
    auto [bad, out] = check("    max_bytes: lots\n");
    CHECK(bad == 1);
    CHECK_MESSAGE(out.find("store.local_tier.max_bytes") != std::string::npos, out);
    auto [unknown, out2] = check("    ttl: 1s\n");
    CHECK(unknown == 1);
    CHECK_MESSAGE(out2.find("store.local_tier.ttl") != std::string::npos, out2);
}

TEST_SUITE_END();
