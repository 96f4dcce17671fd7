// SPDX-License-Identifier: Apache-2.0
// upstreams.<name>.timeouts and routes[].timeouts: resolved once at load, route over upstream over
// global; the global-only keys refused where they do not belong; printed and described.
#include "config_test_support.hpp"

#include <set>

using namespace config_test;

namespace {

const std::string layered = R"(
upstreams:
  plain: { address: "127.0.0.1:8081" }
  slow:
    address: "127.0.0.1:8082"
    timeouts: { upstream_connect: 3s, upstream_response: 40s }
routes:
  - path_prefix: /own/
    upstream: slow
    timeouts: { upstream_response: 90s, body_read: 2m }
  - path_prefix: /inherits/
    upstream: slow
  - path_prefix: /
    upstream: plain
timeouts:
  upstream_connect: 1s
  upstream_response: 5s
  body_read: 20s
)";

} // namespace

TEST_CASE("a route's effective timeouts: its own, else its upstream's, else the global ones")
{
    auto c = cfg::parse(layered, no_env);
    const auto& own = c.routes[0].effective_timeouts;
    CHECK(own.upstream_connect == std::chrono::seconds(3)); // from the upstream
    CHECK(own.upstream_response == std::chrono::seconds(90));
    CHECK(own.body_read == std::chrono::minutes(2));
    const auto& inherits = c.routes[1].effective_timeouts;
    CHECK(inherits.upstream_connect == std::chrono::seconds(3));
    CHECK(inherits.upstream_response == std::chrono::seconds(40));
    CHECK(inherits.body_read == std::chrono::seconds(20));
    const auto& global = c.routes[2].effective_timeouts;
    CHECK(global.upstream_connect == std::chrono::seconds(1));
    CHECK(global.upstream_response == std::chrono::seconds(5));
    CHECK(global.body_read == std::chrono::seconds(20));
    CHECK(global.exchange_bound() == std::chrono::seconds(8));
}

TEST_CASE("print_config writes the timeouts a route or upstream sets, and reads back the same")
{
    auto text = cfg::print_config(cfg::parse(layered, no_env));
    CHECK(text.find("upstream_response: 90s") != std::string::npos);
    CHECK(text.find("upstream_response: 40s") != std::string::npos);
    CHECK(cfg::print_config(cfg::parse(text, no_env)) == text);
    auto again = cfg::parse(text, no_env);
    CHECK(again.routes[1].effective_timeouts.upstream_response == std::chrono::seconds(40));
    CHECK_FALSE(again.routes[1].timeouts.any()); // inherited, not copied into the route
}

TEST_CASE("timeouts that are global only are refused per route and per upstream")
{
    auto problems = joined(problems_of(R"(
upstreams:
  orders:
    address: "127.0.0.1:8081"
    timeouts: { drain: 1s, body_read: 1s, upstream_connect: 0s }
routes:
  - path_prefix: /api/
    upstream: orders
    timeouts: { header_read: 1s, idle: 1s, client_write: 1s, upstream_response: "24x" }
)"));
    CHECK(problems.find("upstreams.orders.timeouts.drain: is global only") != std::string::npos);
    CHECK(problems.find("upstreams.orders.timeouts.body_read: is set per route or globally") !=
          std::string::npos);
    CHECK(problems.find("upstreams.orders.timeouts.upstream_connect: must be greater than 0") !=
          std::string::npos);
    CHECK(problems.find("routes[0].timeouts.header_read: is global only") != std::string::npos);
    CHECK(problems.find("routes[0].timeouts.idle: is global only") != std::string::npos);
    CHECK(problems.find("routes[0].timeouts.client_write: is global only") != std::string::npos);
    CHECK(problems.find("routes[0].timeouts.upstream_response: \"24x\" is not a duration") !=
          std::string::npos);
    CHECK(problems.find("unknown key") == std::string::npos);
}

TEST_CASE("describe_keys lists the timeouts a route or upstream takes, not the global-only ones")
{
    std::set<std::string> described;
    for (const auto& k : cfg::describe_keys())
        described.insert(k.path);
    for (const char* k : {"upstreams.<name>.timeouts.upstream_connect",
                          "upstreams.<name>.timeouts.upstream_response", "routes[].timeouts.upstream_connect",
                          "routes[].timeouts.upstream_response", "routes[].timeouts.body_read"})
        CHECK_MESSAGE(described.count(k) == 1, k);
    for (const char* k :
         {"upstreams.<name>.timeouts.body_read", "routes[].timeouts.header_read", "routes[].timeouts.idle",
          "routes[].timeouts.client_write", "routes[].timeouts.drain"})
        CHECK_MESSAGE(described.count(k) == 0, k);
}

TEST_CASE("lock_ttl warnings use each route's own upstream timeouts; a tenant's the longest route's")
{
    auto c = cfg::parse(layered + R"(
tenants:
  acme: { lock_ttl: 60s }
)",
                        no_env);
    // No route is guarded: only the tenant is checked, against /own/'s 2 x 3s + 90s + 1s.
    auto w = joined(cfg::warnings(c));
    CHECK(w.find("tenants.acme.lock_ttl: 60000ms is not above routes[0]'s 2 x upstream_connect 3s + "
                 "upstream_response 90s + 1s (97000ms)") != std::string::npos);
}
