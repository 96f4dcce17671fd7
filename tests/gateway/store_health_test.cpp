// SPDX-License-Identifier: Apache-2.0
// A store that is full: named by /readyz, counted, new keys refused before anything runs.
#include "reload_support.hpp"

#include <csignal>
#include <cstdlib>
#include <doctest/doctest.h>
#include <string_view>

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

void set_readiness(gateway_fixture& f, const std::string& from, const std::string& to)
{
    const auto path = f.gateway->config_path();
    const auto before = count_lines(*f.gateway, "\"msg\":\"configuration reloaded\"");
    write_text(path, replaced(read_text(path), "readiness:\n  store: " + from, "readiness:\n  store: " + to));
    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "\"msg\":\"configuration reloaded\"", before + 1));
}

} // namespace

TEST_SUITE_BEGIN("store health");

TEST_CASE("a full memory store: 503 store-full with Retry-After from its oldest record, not ready")
{
    if (redis_store_under_test()) {
        MESSAGE("skipped: store.memory's bound (IDEMGATE_TEST_STORE=memory)");
        return;
    }
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

TEST_SUITE_END();
