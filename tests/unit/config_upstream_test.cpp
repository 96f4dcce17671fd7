// SPDX-License-Identifier: Apache-2.0
// Config of upstream fleets: addresses, balance, re-resolution, ejection, and their problems.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace config_test;
using namespace std::chrono_literals;

TEST_CASE("upstream fleets: addresses, balance, re-resolution and ejection parse with their defaults")
{
    auto c = cfg::parse(minimal, no_env);
    REQUIRE(c.upstreams.size() == 1);
    const auto& one = c.upstreams[0];
    REQUIRE(one.addresses.size() == 1);
    CHECK(one.addresses[0].to_string() == "127.0.0.1:8081");
    CHECK(one.address.to_string() == "127.0.0.1:8081");
    CHECK(one.balance == cfg::balance_mode::round_robin);
    CHECK(one.resolve_every == 0ms);
    CHECK(one.eject_after_failures == 3);
    CHECK(one.eject_for == 10s);
    CHECK(one.hosts_file.empty());

    auto f = cfg::parse(R"(
upstreams:
  orders:
    addresses: ["10.0.0.5:8443", "orders.internal:8443", "[::1]:8443"]
    balance: least_pending
    resolve_every: 30s
    eject_after_failures: 0
    eject_for: 1m
  billing:
    address: "billing:9000"
    resolve_every: 0
routes:
  - { path_prefix: /, upstream: orders }
)",
                        no_env);
    REQUIRE(f.upstreams.size() == 2);
    const auto& fleet = f.upstreams[0];
    REQUIRE(fleet.addresses.size() == 3);
    CHECK(fleet.addresses[0].to_string() == "10.0.0.5:8443");
    CHECK(fleet.addresses[1].to_string() == "orders.internal:8443");
    CHECK(fleet.addresses[2].host == "::1");
    CHECK(fleet.address.to_string() == "10.0.0.5:8443");
    CHECK(fleet.balance == cfg::balance_mode::least_pending);
    CHECK(fleet.resolve_every == 30s);
    CHECK(fleet.eject_after_failures == 0);
    CHECK(fleet.eject_for == 1min);
    CHECK(f.upstreams[1].resolve_every == 0ms);
}

TEST_CASE("upstream fleet problems name their key paths")
{
    const std::string routes = "routes:\n  - { path_prefix: /, upstream: o }\n";
    struct row {
        const char* name;
        std::string yaml;
        std::string problem;
    };
    std::vector<row> rows{
        {"both address and addresses",
         "upstreams:\n  o: { address: \"h:1\", addresses: [\"h:2\"] }\n" + routes,
         "upstreams.o.addresses: set together with upstreams.o.address (use one of them)"},
        {"empty addresses", "upstreams:\n  o: { addresses: [] }\n" + routes,
         "upstreams.o.addresses: must list at least one address (host:port)"},
        {"addresses not a list", "upstreams:\n  o: { addresses: \"h:1\" }\n" + routes,
         "upstreams.o.addresses: expected a list of host:port, got a scalar"},
        {"bad second address", "upstreams:\n  o: { addresses: [\"h:1\", \"h\"] }\n" + routes,
         "upstreams.o.addresses[1]: \"h\" is not an endpoint (use host:port)"},
        {"port out of range", "upstreams:\n  o: { addresses: [\"h:1\", \"h:2\", \"h:70000\"] }\n" + routes,
         "upstreams.o.addresses[2]: port 70000 out of range (0-65535)"},
        {"address listed twice", "upstreams:\n  o: { addresses: [\"h:1\", \"h:1\"] }\n" + routes,
         "upstreams.o.addresses[1]: \"h:1\" is listed twice"},
        {"address in the list not a scalar", "upstreams:\n  o: { addresses: [{ a: 1 }] }\n" + routes,
         "upstreams.o.addresses[0]: expected an endpoint (host:port), got a map"},
        {"bad balance", "upstreams:\n  o: { address: \"h:1\", balance: random }\n" + routes,
         "upstreams.o.balance: \"random\" is not allowed (use round_robin or least_pending)"},
        {"negative resolve_every", "upstreams:\n  o: { address: \"h:1\", resolve_every: -5s }\n" + routes,
         "upstreams.o.resolve_every: \"-5s\" is negative (a duration is 0 or more, e.g. 30s)"},
        {"bad resolve_every", "upstreams:\n  o: { address: \"h:1\", resolve_every: often }\n" + routes,
         "upstreams.o.resolve_every: \"often\" is not a duration"},
        {"negative eject_for", "upstreams:\n  o: { address: \"h:1\", eject_for: -1s }\n" + routes,
         "upstreams.o.eject_for: \"-1s\" is negative (a duration is 0 or more, e.g. 30s)"},
        {"zero eject_for", "upstreams:\n  o: { address: \"h:1\", eject_for: 0s }\n" + routes,
         "upstreams.o.eject_for: must be greater than 0"},
        {"negative eject_after_failures",
         "upstreams:\n  o: { address: \"h:1\", eject_after_failures: -1 }\n" + routes,
         "upstreams.o.eject_after_failures: -1 out of range (0-1000)"},
        {"unknown fleet key", "upstreams:\n  o: { address: \"h:1\", balancing: round_robin }\n" + routes,
         "upstreams.o.balancing: unknown key"},
    };
    for (const auto& r : rows) {
        INFO(r.name);
        CHECK(joined(problems_of(r.yaml)) == r.problem);
    }

    std::string many = "upstreams:\n  o:\n    addresses:\n";
    for (int i = 0; i < 65; ++i)
        many += "      - \"h" + std::to_string(i) + ":1\"\n";
    CHECK(joined(problems_of(many + routes)) ==
          "upstreams.o.addresses: 65 addresses; at most 64 are allowed");
}

TEST_CASE("upstreams.<name>.hosts_file names a static name map instead of the resolver")
{
    auto c = cfg::parse(R"(
upstreams:
  orders:
    address: "orders.internal:8081"
    hosts_file: /etc/idemgate/hosts
routes:
  - { path_prefix: /, upstream: orders }
)",
                        no_env);
    REQUIRE(c.upstreams.size() == 1);
    CHECK(c.upstreams[0].hosts_file == "/etc/idemgate/hosts");
}
