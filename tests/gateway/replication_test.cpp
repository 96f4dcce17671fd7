// SPDX-License-Identifier: Apache-2.0
// min_replicas_ack: after each complete the gateway WAITs for that many replicas; the
// client gets its answer either way, and a record fewer replicas acknowledged is counted. Needs
// IDEMGATE_TEST_STORE=redis (a standalone primary whose replicas the test controls): ctest entry
// gateway.replication.redis.
#include "gateway_fixture.hpp"

#include <chrono>
#include <cstdlib>
#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;

TEST_SUITE_BEGIN("replication" * needs_store("redis"));

TEST_CASE("min_replicas_ack: records no replica acknowledged are answered, replayed and counted")
{
    gateway_options options;
    // WAIT gets half of command_timeout: 1 s, ample for a replica on loopback under load.
    options.redis_extra = "    min_replicas_ack: 1\n    command_timeout: 2s\n";
    gateway_fixture f(options);

    // No replica: the answer still comes, the record is kept and replays, and it is counted.
    const std::string key = unique_key("norepl");
    auto first = f.post("/api/orders", key, "{}");
    CHECK(first.status == 201);
    auto again = f.post("/api/orders", key, "{}");
    CHECK(again.header("idempotent-replayed") == "true");
    CHECK(metric(f.gateway->admin_port(), "idemgate_records_unreplicated_total") == 1);
    // The warning reaches the captured output a moment after the answer: waited for, not polled once.
    bool logged = f.process()
                      .wait_for_line(
                          [](const std::string& line) {
                              return line.find("fewer replicas than min_replicas_ack") != std::string::npos;
                          },
                          5s)
                      .has_value();
    CHECK(logged);

    // With a replica attached, the next record is acknowledged: nothing more is counted.
    redis_server replica({"--replicaof", "127.0.0.1", std::to_string(f.store.redis->port())});
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (replica.command({"INFO", "replication"}).find("master_link_status:up") == std::string::npos &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(20ms); // polling the replica's own state
    REQUIRE(replica.command({"INFO", "replication"}).find("master_link_status:up") != std::string::npos);
    auto replicated = f.post("/api/orders", unique_key("repl"), "{}");
    CHECK(replicated.status == 201);
    CHECK(metric(f.gateway->admin_port(), "idemgate_records_unreplicated_total") == 1);
}

TEST_SUITE_END();
