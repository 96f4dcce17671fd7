// SPDX-License-Identifier: Apache-2.0
// store.hash_keys and store.encryption over the in-process stores (memory, and the test-only
// map): the protection decorator applies both to any backend, so a guarded request still replays
// byte for byte, scopes stay apart and the admin API still finds a record. (Redis, where the
// bytes at rest can be read: tests/redis/redis_protection_test.cpp.)
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>

using namespace idemgate::test;

namespace {

// 32 bytes of secret; 64 hex digits per encryption key.
const std::string key_secret = "protection-secret-0123456789abcdef";
const std::string key_a_hex(64, 'a');

gateway_options protected_options(bool hash_keys, bool encryption)
{
    gateway_options o;
    o.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    o.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
    if (hash_keys) {
        o.store_extra += "  key_secret_env: IDEMGATE_TEST_KEY_SECRET\n  hash_keys: true\n";
        o.env.emplace_back("IDEMGATE_TEST_KEY_SECRET", key_secret);
    }
    if (encryption) {
        o.store_extra += "  encryption:\n    key_env: IDEMGATE_TEST_KEY_A\n";
        o.env.emplace_back("IDEMGATE_TEST_KEY_A", key_a_hex);
    }
    return o;
}

http_response order(gateway_fixture& f, const std::string& tenant, const std::string& key,
                    const std::string& body)
{
    return gateway_request(
        f.port(), "POST", "/tenant/orders",
        {{"Idempotency-Key", key}, {"X-Tenant-ID", tenant}, {"Content-Type", "application/json"}}, body);
}

http_response admin(gateway_fixture& f, const std::string& method, const std::string& target)
{
    return http_request(f.gateway->admin_port(), method, target, {{"Authorization", "Bearer " + admin_token}},
                        {});
}

// The replay is the first answer byte for byte but for the fields each answer writes anew.
void check_byte_identical_replay(const http_response& first, const http_response& replay)
{
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(without_fields(replay.raw, {"Idempotent-Replayed", "X-Request-Id", "Date", "Idempotency-Status"}) ==
          without_fields(first.raw, {"Idempotent-Replayed", "X-Request-Id", "Date", "Idempotency-Status"}));
}

} // namespace

TEST_SUITE_BEGIN("protection" * needs_store("memory", "map"));

TEST_CASE("protection: with hash_keys a retry replays, tenants stay apart and the admin API finds the record")
{
    gateway_fixture f(protected_options(true, false));
    const auto key = unique_key("hashed");
    auto first = order(f, "acme", key, R"({"item":"first"})");
    REQUIRE(first.status == 201);
    check_byte_identical_replay(first, order(f, "acme", key, R"({"item":"first"})"));
    CHECK(f.executions() == 1);
    // The same key under another tenant is another scope: it runs, and replays its own answer.
    auto other = order(f, "globex", key, R"({"item":"other"})");
    CHECK(other.status == 201);
    CHECK(other.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);

    auto found = admin(f, "GET", "/admin/v1/records?key=" + key + "&tenant=acme");
    REQUIRE(found.status == 200);
    CHECK(parse_object(found.body)["state"] == "completed");
    CHECK(found.body.find(key) == std::string::npos);
    CHECK(found.body.find("acme") == std::string::npos);
    CHECK(admin(f, "DELETE", "/admin/v1/records?key=" + key + "&tenant=acme").status == 204);
    CHECK(is_problem(admin(f, "GET", "/admin/v1/records?key=" + key + "&tenant=acme"), 404));
    CHECK(admin(f, "GET", "/admin/v1/records?key=" + key + "&tenant=globex").status == 200);
}

TEST_CASE("protection: with encryption and hash_keys a retry replays the first answer byte for byte")
{
    gateway_fixture f(protected_options(true, true));
    const auto key = unique_key("sealed");
    auto first = order(f, "acme", key, R"({"card":"4111111111111111"})");
    REQUIRE(first.status == 201);
    REQUIRE(first.body.find("4111111111111111") != std::string::npos); // the upstream echoes it
    check_byte_identical_replay(first, order(f, "acme", key, R"({"card":"4111111111111111"})"));
    CHECK(f.executions() == 1);
    // Another body under the key: the fingerprint (kept clear) still tells it apart.
    CHECK(is_problem(order(f, "acme", key, R"({"card":"5500000000000004"})"), 409));
    auto found = admin(f, "GET", "/admin/v1/records?key=" + key + "&tenant=acme");
    REQUIRE(found.status == 200);
    CHECK(parse_object(found.body)["status"] == 201);
    CHECK(f.executions() == 1);
}

TEST_SUITE_END();
