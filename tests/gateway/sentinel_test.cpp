// SPDX-License-Identifier: Apache-2.0
// Sentinel: the gateway finds the primary through real sentinels (one primary, one
// replica, three sentinels) and follows it when the primary is killed. The suite needs
// IDEMGATE_TEST_STORE=redis (ctest entry gateway.sentinel.redis); elsewhere it is skipped.
#include "gateway_fixture.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <doctest/doctest.h>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

using namespace idemgate::test;

namespace {

// One primary, one replica and three sentinels on free loopback ports.
struct sentinel_set {
    std::unique_ptr<redis_server> primary;
    std::unique_ptr<redis_server> replica;
    temp_dir dir;
    std::vector<std::uint16_t> ports;
    std::vector<std::unique_ptr<child_process>> sentinels;

    sentinel_set()
    {
        primary = std::make_unique<redis_server>();
        replica = std::make_unique<redis_server>(
            std::vector<std::string>{"--replicaof", "127.0.0.1", std::to_string(primary->port())});
        wait_for([&] {
            return replica->command({"INFO", "replication"}).find("master_link_status:up") !=
                   std::string::npos;
        });
        for (int i = 0; i < 3; ++i) {
            auto port = free_port();
            ports.push_back(port);
            auto file = dir.write_file("sentinel-" + std::to_string(i) + ".conf",
                                       "port " + std::to_string(port) + "\nbind 127.0.0.1\ndir " +
                                           dir.path() + "\nsentinel monitor mymaster 127.0.0.1 " +
                                           std::to_string(primary->port()) +
                                           " 2\nsentinel down-after-milliseconds mymaster 1000\n"
                                           "sentinel failover-timeout mymaster 4000\n");
            sentinels.push_back(std::make_unique<child_process>(
                "redis-server", std::vector<std::string>{file, "--sentinel"}));
        }
        // Ready when every sentinel sees the replica and the two other sentinels.
        wait_for([&] {
            for (auto port : ports) {
                std::string master;
                try {
                    master = redis_command(port, {"SENTINEL", "MASTER", "mymaster"}, 1s);
                } catch (const std::exception&) {
                    return false;
                }
                if (master.find("num-slaves\r\n$1\r\n1") == std::string::npos ||
                    master.find("num-other-sentinels\r\n$1\r\n2") == std::string::npos)
                    return false;
            }
            return true;
        });
    }

    ~sentinel_set()
    {
        for (auto& s : sentinels)
            s->signal(SIGKILL);
    }

    template<class Pred>
    static void wait_for(Pred pred)
    {
        auto deadline = std::chrono::steady_clock::now() + 30s;
        while (!pred()) {
            if (std::chrono::steady_clock::now() > deadline)
                throw std::runtime_error("sentinel test set-up did not settle within 30 s");
            std::this_thread::sleep_for(50ms); // polling the servers' own state
        }
    }

    std::string store_yaml() const
    {
        std::string y =
            "store:\n  type: redis\n  on_failure: reject\n  redis:\n    mode: sentinel\n    nodes:\n";
        for (auto port : ports)
            y += "      - \"127.0.0.1:" + std::to_string(port) + "\"\n";
        y += "    sentinel:\n      master_name: mymaster\n    key_prefix: idemgate-sentinel-test\n";
        return y;
    }
};

int readyz(gateway_process& g)
{
    try {
        return http_request(g.admin_port(), "GET", "/readyz", {}, {}, 1s).status;
    } catch (const std::exception&) {
        return 0;
    }
}

} // namespace

TEST_SUITE_BEGIN("sentinel" * needs_store("redis"));

TEST_CASE("sentinel mode: the gateway finds the primary and follows a failover")
{
    sentinel_set set;
    test_upstream_process upstream;
    store_under_test store;
    // The record must survive the failover: the gateway WAITs for the replica after complete
    // (a WAIT from the test's own connection would count only that connection's writes).
    store.yaml = set.store_yaml() + "    min_replicas_ack: 1\n    command_timeout: 2s\n";
    gateway_options options;
    gateway_process gateway(gateway_yaml(store, upstream.port(), free_port(), options));
    sentinel_set::wait_for([&] { return readyz(gateway) == 200; });

    auto post = [&](const std::string& key) {
        return gateway_request(gateway.port(), "POST", "/api/orders",
                               {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
    };
    const std::string before = unique_key("sentinel-before");
    auto first = post(before);
    REQUIRE(first.status == 201);
    REQUIRE(metric(gateway.admin_port(), "idemgate_records_unreplicated_total") == 0);

    auto killed = std::chrono::steady_clock::now();
    set.primary->stop(true);
    // Until the sentinels promote the replica, requests follow on_failure (503 here).
    sentinel_set::wait_for([&] { return post(unique_key("probe")).status == 201; });
    auto gap = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - killed);
    MESSAGE("from the primary's kill to the first request served by the promoted replica: " << gap.count()
                                                                                            << " ms");
    CHECK(gap < 20s);
    CHECK(set.replica->command({"ROLE"}).find("master") != std::string::npos);
    CHECK(readyz(gateway) == 200);
    auto replay = post(before);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.body == first.body);
    bool logged = false;
    for (const auto& line : gateway.process().lines())
        logged = logged || (line.find("sentinels name the primary") != std::string::npos &&
                            line.find(std::to_string(set.replica->port())) != std::string::npos);
    CHECK(logged);
}

// The gateway's connections on `node` (its data connections log in as user gw).
int gateway_clients(redis_server& node)
{
    std::string list;
    try {
        list = node.command({"CLIENT", "LIST"});
    } catch (const std::exception&) {
        return -1;
    }
    int n = 0;
    for (std::size_t pos = list.find(" user=gw "); pos != std::string::npos;
         pos = list.find(" user=gw ", pos + 1))
        ++n;
    return n;
}

TEST_CASE("sentinel mode: data connections leave a primary the sentinels no longer name at once")
{
    sentinel_set set;
    // A split the old primary does not notice: it refuses the sentinels' PING (they log in as
    // the default user) but keeps serving the gateway, which logs in as gw. The sentinels promote
    // the replica; the old primary stays a writable primary, as on the minority side of a
    // partition.
    for (auto* node : {set.primary.get(), set.replica.get()})
        REQUIRE(node->command({"ACL", "SETUSER", "gw", "on", ">gw-pw", "~*", "&*", "+@all"}) == "+OK\r\n");
    test_upstream_process upstream;
    store_under_test store;
    store.yaml = set.store_yaml() + "    username: gw\n    password_env: IDEMGATE_TEST_GW_PASSWORD\n";
    gateway_options options;
    gateway_process gateway(gateway_yaml(store, upstream.port(), free_port(), options),
                            {{"IDEMGATE_TEST_GW_PASSWORD", "gw-pw"}});
    sentinel_set::wait_for([&] { return readyz(gateway) == 200; });
    REQUIRE(gateway_clients(*set.primary) >= 1);

    // New keys all along, each remembered with the time it was sent.
    using clock = std::chrono::steady_clock;
    std::mutex mutex;
    std::vector<std::pair<std::string, clock::time_point>> sent;
    std::atomic<bool> stop{false};
    std::thread load([&] {
        for (int i = 0; !stop; ++i) {
            auto key = unique_key("switch-" + std::to_string(i));
            {
                std::lock_guard lock(mutex);
                sent.emplace_back(key, clock::now());
            }
            try {
                gateway_request(gateway.port(), "POST", "/api/orders",
                                {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
            } catch (const std::exception&) {
            }
            std::this_thread::sleep_for(10ms); // a steady trickle, not a flood
        }
    });
    struct joiner {
        std::atomic<bool>& stop;
        std::thread& t;
        ~joiner()
        {
            stop = true;
            t.join();
        }
    } join_load{stop, load};

    REQUIRE(set.primary->command({"ACL", "SETUSER", "default", "-ping"}) == "+OK\r\n");
    auto faulted = clock::now();
    // The gateway counts the switch when it hears of it; the test polls that counter.
    sentinel_set::wait_for(
        [&] { return metric(gateway.admin_port(), "idemgate_store_primary_switches_total") >= 1; });
    auto switched = clock::now();
    while (gateway_clients(*set.primary) > 0 && clock::now() - switched < 5s)
        std::this_thread::sleep_for(10ms);
    auto left = clock::now();
    auto ms = [](auto d) { return std::chrono::duration_cast<milliseconds>(d).count(); };
    MESSAGE("fault to switch heard: " << ms(switched - faulted)
                                      << " ms; switch heard to no connection on the "
                                      << "old primary: " << ms(left - switched) << " ms");
    CHECK(gateway_clients(*set.primary) == 0);
    CHECK(left - switched <= 500ms);
    CHECK(metric(gateway.admin_port(), "idemgate_store_primary_switches_total") == 1);
    // Requests keep flowing to the new primary.
    sentinel_set::wait_for([&] {
        return gateway_request(
                   gateway.port(), "POST", "/api/orders",
                   {{"Idempotency-Key", unique_key("after")}, {"Content-Type", "application/json"}}, "{}")
                   .status == 201;
    });
    stop = true;
    // No key sent after the gateway heard of the switch reached the old primary.
    auto on_old = set.primary->command({"KEYS", "idemgate-sentinel-test:*"});
    std::lock_guard lock(mutex);
    int before_switch = 0;
    int after_switch = 0;
    for (const auto& [key, at] : sent) {
        if (on_old.find(key + "\r\n") == std::string::npos)
            continue;
        (at < switched ? before_switch : after_switch)++;
    }
    MESSAGE("keys on the old primary: " << before_switch << " sent before the switch was heard, "
                                        << after_switch << " after");
    CHECK(before_switch > 0);
    CHECK(after_switch == 0);
    bool logged = false;
    for (const auto& line : gateway.process().lines())
        logged = logged || line.find("closing the connection to the old primary") != std::string::npos;
    CHECK(logged);
}

TEST_SUITE_END();
