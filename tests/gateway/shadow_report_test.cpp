// SPDX-License-Identifier: Apache-2.0
// The shadow report (routes[].idempotency.mode: shadow): what a shadow route saw, per figure,
// against the real binary and a counting upstream, over every store; two gateways on one Redis add
// up.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;

namespace {

// A gateway whose /api/ route is in shadow mode, with the admin API on.
gateway_options shadow_options(const std::string& extra = {})
{
    gateway_options options;
    options.idempotency_extra = "      mode: shadow\n" + extra;
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
    return options;
}

// GET /admin/v1/shadow on `admin_port`: the route /api/'s entry, or an empty object.
boost::json::object shadow_route(std::uint16_t admin_port)
{
    auto res = http_request(admin_port, "GET", "/admin/v1/shadow",
                            {{"Authorization", "Bearer " + admin_token}}, {}, io_timeout);
    auto report = parse_object(res.body);
    if (res.status != 200 || !report.contains("routes"))
        return {};
    for (const auto& r : report.at("routes").as_array())
        if (r.as_object().at("route") == "/api/")
            return r.as_object();
    return {};
}

std::int64_t figure(const boost::json::object& route, const char* part, const char* name)
{
    if (!route.contains(part))
        return -1;
    const auto& v = route.at(part).as_object().at(name);
    return v.is_int64() ? v.as_int64() : v.is_uint64() ? static_cast<std::int64_t>(v.as_uint64()) : -2;
}

} // namespace

TEST_SUITE_BEGIN("shadow report");

TEST_CASE("a shadow route reports duplicates, differing answers, reuse, concurrent pairs and late retries")
{
    auto options = shadow_options("      tombstone_ttl: 1h\n");
    options.record_ttl = "2s";
    gateway_fixture f(options);
    const auto same = std::vector<std::pair<std::string, std::string>>{{"X-Test-Body-Size", "10"}};
    // One key retried: the same answer, another status, another body; then reused.
    const auto a = unique_key("shadow-a");
    REQUIRE(f.post("/api/orders", a, "{}", same).status == 201);
    CHECK(f.post("/api/orders", a, "{}", same).status == 201);
    CHECK(f.post("/api/orders", a, "{}", {{"X-Test-Body-Size", "10"}, {"X-Test-Status", "200"}}).status ==
          200);
    CHECK(f.post("/api/orders", a, "{}", {{"X-Test-Body-Size", "11"}}).status == 201);
    CHECK(f.post("/api/orders", a, R"({"other":1})", same).status == 201);
    // Two at once: the second arrives while the first is in flight.
    const auto b = unique_key("shadow-b");
    std::jthread slow([&] { f.post("/api/orders", b, "{}", {{"X-Test-Delay-Ms", "1500"}}); });
    REQUIRE(f.wait_for_executions(6));
    CHECK(f.post("/api/orders", b, "{}").status == 201);
    slow.join();
    // Retried after record_ttl: its tombstone says so.
    const auto c = unique_key("shadow-c");
    REQUIRE(f.post("/api/orders", c, "{}").status == 201);
    const auto record = "/admin/v1/records?key=" + c;
    REQUIRE(poll_until(5s, [&] {
        return http_request(f.gateway->admin_port(), "GET", record,
                            {{"Authorization", "Bearer " + admin_token}}, {}, io_timeout)
                   .status == 404;
    }));
    CHECK(f.post("/api/orders", c, "{}").status == 201);
    CHECK(f.executions() == 9); // shadow mode ran every one
    auto route = shadow_route(f.gateway->admin_port());
    for (const char* part : {"since_start", "window"}) {
        INFO(part, " ", boost::json::serialize(route));
        CHECK(figure(route, part, "keyed") == 9);
        CHECK(figure(route, part, "duplicates_executed") == 3);
        CHECK(figure(route, part, "duplicates_differing") == 2);
        CHECK(figure(route, part, "reuse") == 1);
        CHECK(figure(route, part, "concurrent") == 1);
        CHECK(figure(route, part, "after_ttl") == 1);
    }
    CHECK(metric_reaching(f, R"(idemgate_shadow_figures_total{route="/api/",figure="duplicates_executed"})",
                          3) == 3);
}

TEST_CASE("without tombstones a late retry is not measured")
{
    gateway_fixture f(shadow_options());
    const auto key = unique_key("shadow-plain");
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    auto route = shadow_route(f.gateway->admin_port());
    INFO(boost::json::serialize(route));
    CHECK(figure(route, "since_start", "keyed") == 1);
    REQUIRE(route.contains("window"));
    CHECK(route.at("window").as_object().at("after_ttl") == "not_measured");
    // The window: admin.shadow_window (1h by default), or the call's `window` parameter.
    auto ask = [&](const std::string& query) {
        return http_request(f.gateway->admin_port(), "GET", "/admin/v1/shadow" + query,
                            {{"Authorization", "Bearer " + admin_token}}, {}, io_timeout);
    };
    CHECK(parse_object(ask("").body)["window_seconds"] == 3600);
    auto quarter = ask("?window=15m");
    REQUIRE(quarter.status == 200);
    auto report = parse_object(quarter.body);
    CHECK(report["window_seconds"] == 900);
    CHECK(boost::json::serialize(report).find(R"("window":{"keyed":1,)") != std::string::npos);
    const std::pair<std::string, std::string> refusals[] = {
        {"?window=90s", R"(window \"90s\" must be whole minutes from 1m to 24h)"},
        {"?window=25h", R"(window \"25h\" must be whole minutes from 1m to 24h)"},
        {"?span=5m", "unknown parameter span (window)"}};
    for (const auto& refusal : refusals) {
        INFO(refusal.first);
        auto refused = ask(refusal.first);
        CHECK(refused.status == 400);
        CHECK(refused.header("content-type") == "application/problem+json");
        CHECK(refused.body.find(refusal.second) != std::string::npos);
    }
}

TEST_CASE("two gateways on one store add up" * needs_store("redis", "cluster"))
{
    gateway_fixture f(shadow_options());
    auto second = f.start_another();
    const auto key = unique_key("shadow-fleet");
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    REQUIRE(gateway_request(second->port(), "POST", "/api/orders", {{"Idempotency-Key", key}}, "{}").status ==
            201);
    // The second gateway's counts reach the store with its next flush (each second).
    boost::json::object route;
    CHECK(poll_until(5s, [&] {
        route = shadow_route(f.gateway->admin_port());
        return figure(route, "window", "duplicates_executed") == 1;
    }));
    INFO(boost::json::serialize(route));
    CHECK(figure(route, "since_start", "keyed") == 2);
    CHECK(figure(route, "since_start", "duplicates_executed") == 1);
}

TEST_SUITE_END();
