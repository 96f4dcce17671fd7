// SPDX-License-Identifier: Apache-2.0
// Held keys in the admin API: GET /admin/v1/held lists the keys held after an unknown outcome,
// POST /admin/v1/records/resolve settles one as executed (a retry gets 422 with the confirmed
// status) or not executed (the next retry runs once). Real idemgate, real test upstream, over
// each store.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <set>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

// A route /held/ with tenants whose upstream 500 holds the key (as an answer that never came
// would), and the admin API on.
gateway_options held_options(const std::string& store_extra = {}, const std::string& reconcile = {})
{
    gateway_options o;
    o.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    o.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
    o.store_extra = store_extra;
    o.extra_routes = "  - path_prefix: \"/held/\"\n"
                     "    upstream: orders\n"
                     "    idempotency:\n"
                     "      methods: [POST]\n"
                     "      tenant_header: X-Tenant-ID\n"
                     "      on_status:\n"
                     "        \"500\": hold\n" +
                     reconcile;
    return o;
}

http_response order(gateway_fixture& f, const std::string& tenant, const std::string& key, bool crash = false)
{
    std::vector<std::pair<std::string, std::string>> headers{
        {"Idempotency-Key", key}, {"X-Tenant-ID", tenant}, {"Content-Type", "application/json"}};
    if (crash)
        headers.emplace_back("X-Test-Status", "500");
    return gateway_request(f.port(), "POST", "/held/orders", headers, R"({"amount":10})");
}

// A key held: the upstream's 500 holds it.
void hold(gateway_fixture& f, const std::string& tenant, const std::string& key)
{
    auto res = order(f, tenant, key, true);
    REQUIRE(res.status == 500);
    REQUIRE(res.header("idempotency-status") == "held");
}

http_response admin(gateway_fixture& f, const std::string& method, const std::string& target,
                    const std::string& body = {})
{
    return http_request(f.gateway->admin_port(), method, target,
                        {{"Authorization", "Bearer " + admin_token}, {"Content-Type", "application/json"}},
                        body, io_timeout);
}

boost::json::array held(gateway_fixture& f, const std::string& query = {})
{
    auto res = admin(f, "GET", "/admin/v1/held" + query);
    REQUIRE(res.status == 200);
    return parse_object(res.body)["held"].as_array();
}

http_response resolve(gateway_fixture& f, const std::string& body)
{
    return admin(f, "POST", "/admin/v1/records/resolve", body);
}

std::string problem_type(const http_response& res)
{
    auto type = parse_object(res.body)["type"];
    return type.is_string() ? std::string(type.as_string()) : std::string();
}

} // namespace

TEST_SUITE_BEGIN("held keys");

TEST_CASE("held keys: a held key is listed with what its probe saw; resolved executed, a retry gets 422 with "
          "the confirmed status")
{
    // The probe's lookup answers 503: neither found nor not_found, so the key stays held.
    gateway_fixture f(held_options({}, "      reconcile:\n        path: \"/__lookup/503/{key}\"\n"
                                       "        after: 100ms\n        every: 200ms\n"));
    const auto key = unique_key("paid");
    hold(f, "acme", key);
    boost::json::object entry;
    CHECK(poll_until(3s, [&] {
        auto list = held(f);
        if (list.size() != 1)
            return false;
        entry = list[0].as_object();
        return !entry["probe"].is_null();
    }));
    CHECK(entry["probe"].at("last_seen") == "status 503: neither found nor not_found");
    CHECK(entry["probe"].at("last_at").is_string());
    CHECK(entry["tenant"] == "acme");
    CHECK(entry["key"] == boost::json::string_view(key));
    CHECK(entry["route"] == "/held/");
    CHECK(entry["held_at"].is_string());
    CHECK(entry["age_ms"].to_number<double>() >= 0);
    CHECK(entry["attempt"].is_null()); // the route does not count executions
    CHECK(entry["record_id"].is_string());

    auto done = resolve(f, R"({"tenant":"acme","key":")" + key +
                               R"(","resolution":"executed","status":201,"reason":"ledger shows order 7"})");
    REQUIRE(done.status == 200);
    auto body = parse_object(done.body);
    CHECK(body["resolved"] == true);
    CHECK(body["resolution"] == "executed");
    CHECK(body["state"] == "status_only");
    CHECK(held(f).empty());

    auto retry = order(f, "acme", key);
    CHECK(is_problem(retry, 422));
    CHECK(problem_type(retry) == "/.well-known/idempotency/problems/answer-not-replayable");
    CHECK(parse_object(retry.body)["original_status"] == 201);
    CHECK(f.executions() == 1);
    // Resolved once: nothing is held any more.
    auto again = resolve(f, R"({"tenant":"acme","key":")" + key +
                                R"(","resolution":"not_executed","reason":"second thoughts"})");
    CHECK(is_problem(again, 409));
    CHECK(problem_type(again) == "/.well-known/idempotency/problems/record-not-held");
    CHECK(order(f, "acme", key).status == 422);
    CHECK(f.executions() == 1);
    CHECK(metric_reaching(f, R"(idemgate_held_resolutions_total{resolution="executed"})", 1) == 1);
    auto line = f.process().wait_for_line([&](const std::string& l) {
        return l.find("resolved as executed") != std::string::npos && l.find(key) != std::string::npos;
    });
    REQUIRE(line.has_value());
    CHECK(line->find("ledger shows order 7") != std::string::npos);
    CHECK(line->find("127.0.0.1") != std::string::npos);
}

TEST_CASE("held keys: resolved not_executed, the next retry executes once; a completed key is 409; bad "
          "bodies are refused")
{
    gateway_fixture f(held_options());
    const auto key = unique_key("lost");
    hold(f, "acme", key);
    auto released = resolve(f, R"({"tenant":"acme","key":")" + key +
                                   R"(","resolution":"not_executed","reason":"no order in the ledger"})");
    REQUIRE(released.status == 200);
    CHECK(parse_object(released.body)["state"] == "released");
    CHECK(order(f, "acme", key).status == 201);
    CHECK(order(f, "acme", key).header("idempotent-replayed") == "true");
    CHECK(f.executions() == 2);
    CHECK(metric_reaching(f, R"(idemgate_held_resolutions_total{resolution="not_executed"})", 1) == 1);

    const std::string completed =
        R"({"tenant":"acme","key":")" + key + R"(","resolution":"not_executed","reason":"x"})";
    CHECK(is_problem(resolve(f, completed), 409));
    CHECK(is_problem(
        resolve(f, R"({"tenant":"acme","key":"nobody","resolution":"not_executed","reason":"x"})"), 404));
    // A held key deleted by an operator leaves the list when a listing meets it.
    const auto deleted = unique_key("gone");
    hold(f, "acme", deleted);
    CHECK(admin(f, "DELETE", "/admin/v1/records?tenant=acme&key=" + deleted).status == 204);
    CHECK(held(f).empty());

    const auto still = unique_key("still");
    hold(f, "acme", still);
    const std::string head = R"({"tenant":"acme","key":")" + still + R"(",)";
    for (const auto& bad :
         {std::string("not json"), std::string("[1,2]"),
          head + R"("resolution":"executed","reason":"no status"})",
          head + R"("resolution":"executed","status":99,"reason":"x"})",
          head + R"("resolution":"maybe","reason":"x"})",
          head + R"("resolution":"not_executed","reason":""})",
          head + R"("resolution":"not_executed","reason":")" + std::string(201, 'r') + "\"}",
          head + R"("resolution":"not_executed","status":201,"reason":"x"})",
          std::string(R"({"tenant":"acme","resolution":"not_executed","reason":"x"})")})
        CHECK_MESSAGE(is_problem(resolve(f, bad), 400), bad);
    auto big =
        resolve(f, head + R"("resolution":"not_executed","reason":")" + std::string(17 * 1024, 'r') + "\"}");
    CHECK(is_problem(big, 413));
    auto get = admin(f, "GET", "/admin/v1/records/resolve");
    CHECK(is_problem(get, 405));
    CHECK(get.header("allow") == "POST");
    CHECK(http_request(f.gateway->admin_port(), "GET", "/admin/v1/held", {}, {}, io_timeout).status == 401);
    // Still held after all that, and the existing endpoints answer as before.
    CHECK(held(f).size() == 1);
    CHECK(admin(f, "GET", "/admin/v1/records?tenant=acme&key=" + still).status == 200);
    CHECK(admin(f, "GET", "/metrics").status == 200);
    CHECK(f.executions() == 4);
}

TEST_CASE("held keys: pages of a few keys, and per tenant")
{
    gateway_fixture f(held_options());
    const auto stem = unique_key("page");
    for (const auto* tenant : {"acme", "globex"})
        for (int i = 0; i < 2; ++i)
            hold(f, tenant, stem + "-" + std::to_string(i));
    hold(f, "acme-eu", stem + "-x");
    std::vector<std::string> seen;
    std::string query = "?limit=2";
    for (int page = 0; page < 4; ++page) {
        auto res = admin(f, "GET", "/admin/v1/held" + query);
        REQUIRE(res.status == 200);
        auto body = parse_object(res.body);
        for (const auto& e : body["held"].as_array())
            seen.push_back(std::string(e.at("tenant").as_string()) + "/" +
                           std::string(e.at("key").as_string()));
        if (body["next_cursor"].is_null())
            break;
        CHECK(body["held"].as_array().size() == 2);
        query = "?limit=2&cursor=" + std::string(body["next_cursor"].as_string());
    }
    CHECK(seen.size() == 5);
    CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 5);
    auto acme = held(f, "?tenant=acme");
    CHECK(acme.size() == 2);
    for (const auto& e : acme)
        CHECK(e.at("tenant") == "acme");
    CHECK(held(f, "?tenant=acm").empty());
    CHECK(is_problem(admin(f, "GET", "/admin/v1/held?limit=0"), 400));
    CHECK(is_problem(admin(f, "GET", "/admin/v1/held?cursor=zz"), 400));
}

TEST_CASE("held keys: with hash_keys the list shows record IDs and resolve takes the raw key")
{
    auto o = held_options("  key_secret_env: IDEMGATE_TEST_KEY_SECRET\n  hash_keys: true\n");
    o.env.emplace_back("IDEMGATE_TEST_KEY_SECRET", "held-keys-secret-0123456789abcdef");
    gateway_fixture f(o);
    const auto key = unique_key("hashed");
    hold(f, "acme", key);
    auto list = held(f);
    REQUIRE(list.size() == 1);
    auto entry = list[0].as_object();
    CHECK(entry["key"].is_null());
    CHECK(entry["tenant"].is_null()); // the store has the tenant's tag only
    REQUIRE(entry["record_id"].is_string());
    const std::string id(entry["record_id"].as_string());
    CHECK(id.size() >= 64);
    CHECK(id.find(key) == std::string::npos);
    auto acme = held(f, "?tenant=acme");
    REQUIRE(acme.size() == 1);
    CHECK(acme[0].at("tenant") == "acme");
    CHECK(acme[0].at("record_id") == boost::json::string_view(id));
    CHECK(held(f, "?tenant=globex").empty());
    auto released = resolve(f, R"({"tenant":"acme","key":")" + key +
                                   R"(","resolution":"not_executed","reason":"not in the ledger"})");
    REQUIRE(released.status == 200);
    CHECK(parse_object(released.body)["record_id"] == boost::json::string_view(id));
    CHECK(held(f).empty());
    CHECK(order(f, "acme", key).status == 201);
    CHECK(f.executions() == 2);
}

TEST_SUITE_END();
