// SPDX-License-Identifier: Apache-2.0
// Configuration reload: SIGHUP and POST /admin/v1/reload read the file again; a valid
// file becomes live for new requests without dropping a connection, a broken one changes nothing
// and every problem is logged with its key path, and the settings a running process cannot
// change are kept, with a warning. Runs over every store.
#include "reload_support.hpp"

#include <chrono>
#include <csignal>
#include <ctime>
#include <doctest/doctest.h>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

const std::string reload_admin_token = "reload-admin-token-0123456789";

gateway_options reload_options()
{
    gateway_options options;
    options.idempotency_extra = "      expose_expiry: true\n";
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", reload_admin_token);
    return options;
}

// Seconds from now to an IMF-fixdate (Idempotency-Expires).
long seconds_until(const std::string& imf)
{
    std::tm tm{};
    if (!strptime(imf.c_str(), "%a, %d %b %Y %H:%M:%S GMT", &tm))
        return -1;
    // system_clock, not time(): glibc's time() reads the coarse clock, which can still show the
    // previous second after the gateway (on the precise clock) has stamped the next one.
    return static_cast<long>(timegm(&tm) -
                             std::chrono::system_clock::to_time_t(std::chrono::system_clock::now()));
}

http_response post_on(http_connection& c, const std::string& path, const std::string& key)
{
    std::vector<std::pair<std::string, std::string>> headers{{"Content-Type", "application/json"}};
    if (!key.empty())
        headers.emplace_back("Idempotency-Key", key);
    return c.request("POST", path, headers, "{}");
}

} // namespace

TEST_SUITE_BEGIN("reload");

TEST_CASE("SIGHUP: a valid file is live for the next request, on a connection that stays open")
{
    gateway_fixture f(reload_options());
    http_connection c(f.port(), io_timeout);
    const auto before_key = unique_key("reload-before");
    auto before = post_on(c, "/api/orders", before_key);
    REQUIRE(before.status == 201);
    CHECK(seconds_until(before.header("idempotency-expires")) > 23 * 3600);
    CHECK(post_on(c, "/plain/x", "").status == 201);

    // record_ttl 24h -> 1h; the /plain/ route replaced by /fresh/.
    const auto path = f.gateway->config_path();
    auto text = replaced(read_text(path), "record_ttl: 24h", "record_ttl: 1h");
    text = replaced(text, "path_prefix: \"/plain/\"", "path_prefix: \"/fresh/\"");
    write_text(path, text);
    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "\"msg\":\"configuration reloaded\""));

    // Same connection: new requests see the new routes and TTL.
    auto after = post_on(c, "/api/orders", unique_key("reload-after"));
    REQUIRE(after.status == 201);
    auto left = seconds_until(after.header("idempotency-expires"));
    CHECK(left > 3000);
    CHECK_MESSAGE(left <= 3600, text);
    CHECK(is_problem(post_on(c, "/plain/x", ""), 404));
    CHECK(post_on(c, "/fresh/x", "").status == 201);
    // A record made before keeps what it was recorded with.
    auto replay = post_on(c, "/api/orders", before_key);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.header("idempotency-expires") == before.header("idempotency-expires"));

    CHECK(metric(f.gateway->admin_port(), "idemgate_config_reloads_total{result=\"ok\"}") == 1);
    CHECK(metric(f.gateway->admin_port(), "idemgate_config_generation") == 2);
    auto metrics = http_request(f.gateway->admin_port(), "GET", "/metrics").body;
    CHECK(metrics.find("idemgate_config_info{sha256=\"") != std::string::npos);
}

TEST_CASE("a broken file keeps the running configuration; every problem is logged with its key path")
{
    gateway_fixture f(reload_options());
    const auto path = f.gateway->config_path();
    const auto good = read_text(path);
    auto bad = replaced(good, "record_ttl: 24h", "record_ttl: 24x");
    bad = replaced(bad, "methods: [POST]", "methods: [\"PO ST\"]");
    write_text(path, bad);
    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "configuration reload failed"));
    CHECK(logged(*f.gateway, "routes[0].idempotency.record_ttl"));
    CHECK(logged(*f.gateway, "routes[1].idempotency.methods"));
    CHECK(f.process().running());
    CHECK(metric(f.gateway->admin_port(), "idemgate_config_reloads_total{result=\"failed\"}") == 1);
    CHECK(metric(f.gateway->admin_port(), "idemgate_config_generation") == 1);
    // Still the old routes.
    CHECK(f.post("/plain/x", "", "{}").status == 201);
    auto key = unique_key("reload-broken");
    auto first = f.post("/api/orders", key, "{}");
    CHECK(first.status == 201);
    CHECK(seconds_until(first.header("idempotency-expires")) > 23 * 3600);

    // The admin API answers the same refusal, with the problems in the body.
    auto refused = http_request(f.gateway->admin_port(), "POST", "/admin/v1/reload",
                                {{"Authorization", "Bearer " + reload_admin_token}}, {});
    CHECK(is_problem(refused, 422));
    CHECK(parse_object(refused.body)["type"] == "/.well-known/idempotency/problems/invalid-configuration");
    CHECK(refused.body.find("routes[0].idempotency.record_ttl") != std::string::npos);
    // And applies a good file.
    write_text(path, good);
    auto applied = http_request(f.gateway->admin_port(), "POST", "/admin/v1/reload",
                                {{"Authorization", "Bearer " + reload_admin_token}}, {});
    CHECK(applied.status == 200);
    CHECK(parse_object(applied.body)["generation"] == 2);
    CHECK(http_request(f.gateway->admin_port(), "POST", "/admin/v1/reload", {}, {}).status == 401);
}

TEST_CASE("settings that need a restart keep their running values, with a warning")
{
    gateway_fixture f(reload_options());
    const auto path = f.gateway->config_path();
    auto text = replaced(read_text(path), "threads: 2", "threads: 3");
    text = replaced(text, "record_ttl: 24h", "record_ttl: 2h");
    write_text(path, text);
    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "\"msg\":\"configuration reloaded\""));
    CHECK(logged(*f.gateway, "needs a restart"));
    bool named = false;
    for (const auto& l : f.process().lines())
        named = named || (l.find("needs a restart") != std::string::npos &&
                          l.find("\"threads\"") != std::string::npos);
    CHECK(named);
    // The rest of the file applied.
    auto res = f.post("/api/orders", unique_key("reload-restart"), "{}");
    CHECK(seconds_until(res.header("idempotency-expires")) <= 7200);
    CHECK(f.process().running());
}

TEST_SUITE_END();
