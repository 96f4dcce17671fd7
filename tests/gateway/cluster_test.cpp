// SPDX-License-Identifier: Apache-2.0
// Cluster: the gateway over a real Redis Cluster (3 primaries + 3 replicas) while slots
// move and primaries fail. The suite needs IDEMGATE_TEST_STORE=cluster (ctest entry
// gateway.cluster.cluster); on the other stores doctest skips it.
#include "gateway_fixture.hpp"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <doctest/doctest.h>
#include <sstream>
#include <thread>
#include <unistd.h>

using namespace idemgate::test;

namespace {

// The integer of a RESP integer reply (":123\r\n").
long long resp_integer(const std::string& reply)
{
    REQUIRE_MESSAGE(reply.rfind(':', 0) == 0, reply);
    return std::stoll(reply.substr(1));
}

int readyz(gateway_fixture& f)
{
    try {
        return http_request(f.gateway->admin_port(), "GET", "/readyz", {}, {}, 1s).status;
    } catch (const std::exception&) {
        return 0;
    }
}

// Waits (bounded) until /readyz answers `status`; returns how long it took, or -1 ms.
milliseconds wait_readyz(gateway_fixture& f, int status, milliseconds timeout)
{
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < timeout) {
        if (readyz(f) == status)
            return std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - start);
        std::this_thread::sleep_for(20ms); // polling the gateway's readiness
    }
    return milliseconds(-1);
}

// A hash tag (with its braces) whose slot `cluster` serves on primary `primary`; record keys
// keep the client's braces, so every key containing it lives there.
std::string tag_on(redis_cluster& cluster, std::size_t primary, const std::string& stem)
{
    for (int i = 0; i < 10000; ++i) {
        auto tag = "{" + stem + std::to_string(::getpid()) + "-" + std::to_string(i) + "}";
        if (cluster.primary_for(tag) == primary)
            return tag;
    }
    FAIL("no hash tag found for primary " << primary);
    return {};
}

// The sharded channels node `i` has subscribers on whose name contains `part` (PUBSUB
// SHARDCHANNELS), as raw text; "" when none.
std::string shard_channel_with(redis_cluster& cluster, std::size_t i, const std::string& part)
{
    auto reply = cluster.node(i).command({"PUBSUB", "SHARDCHANNELS", "*" + part + "*"});
    if (reply.rfind("*1\r\n$", 0) != 0)
        return {};
    auto len_end = reply.find("\r\n", 5); // after "*1\r\n$"
    auto len = std::stoul(reply.substr(5, len_end - 5));
    return reply.substr(len_end + 2, len);
}

// The subscriber count of a [S]NUMSUB reply for one channel: "*2\r\n$n\r\nname\r\n:count\r\n".
long long numsub_count(const std::string& reply)
{
    auto colon = reply.rfind(':');
    REQUIRE_MESSAGE(colon != std::string::npos, reply);
    return std::stoll(reply.substr(colon + 1));
}

// Waits (bounded) until node `i` has a sharded subscriber on a channel containing `part`;
// returns that channel, or "".
std::string wait_shard_channel(redis_cluster& cluster, std::size_t i, const std::string& part,
                               milliseconds timeout)
{
    auto start = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - start < timeout) {
        auto channel = shard_channel_with(cluster, i, part);
        if (!channel.empty())
            return channel;
        std::this_thread::sleep_for(10ms); // polling the server's pub/sub state
    }
    return {};
}

// A duplicate POST that may wait: a socket timeout past the 10 s wait_timeout, and status 0
// (never an exception out of the test's thread) if no answer comes by then.
http_response waiting_post(gateway_fixture& f, const std::string& key)
{
    try {
        return http_request(f.port(), "POST", "/api/orders",
                            {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}", 15s);
    } catch (const std::exception&) {
        return http_response{};
    }
}

gateway_options cluster_wait_options()
{
    gateway_options options;
    options.idempotency_extra = "      on_in_flight: wait\n      wait_timeout: 10s\n";
    return options;
}

} // namespace

TEST_SUITE_BEGIN("cluster" * needs_store("cluster"));

TEST_CASE("a slot migrating between primaries: ASK then MOVED are followed, nothing runs twice")
{
    gateway_options options;
    options.breaks_store = true; // it moves a slot: a cluster of its own
    gateway_fixture f(options);
    auto& cluster = *f.store.cluster;
    // Keys with one hash tag share a slot (record keys keep the client's braces).
    const std::string tag = "{mig" + std::to_string(::getpid()) + "}";
    auto slot = std::to_string(resp_integer(cluster.node(0).command({"CLUSTER", "KEYSLOT", tag})));
    auto a = cluster.primary_for(tag);
    auto b = cluster.other_primary(a);
    auto id_a = cluster.id_of(a);
    auto id_b = cluster.id_of(b);

    auto first = f.post("/api/orders", tag + "-1", "{}");
    REQUIRE(first.status == 201);

    // Migration under way: keys still on A are served there, new ones go to B (ASK).
    REQUIRE(cluster.node(b).command({"CLUSTER", "SETSLOT", slot, "IMPORTING", id_a}) == "+OK\r\n");
    REQUIRE(cluster.node(a).command({"CLUSTER", "SETSLOT", slot, "MIGRATING", id_b}) == "+OK\r\n");
    auto second = f.post("/api/orders", tag + "-2", "{}");
    CHECK(second.status == 201);
    auto replay_first = f.post("/api/orders", tag + "-1", "{}");
    CHECK(replay_first.header("idempotent-replayed") == "true");
    auto replay_second = f.post("/api/orders", tag + "-2", "{}");
    CHECK(replay_second.header("idempotent-replayed") == "true");
    CHECK(replay_second.body == second.body);
    CHECK(metric(f.gateway->admin_port(), "idemgate_redis_cluster_redirects_total{kind=\"ask\"}") >= 1);

    // Move what is left on A, then hand the slot to B everywhere: MOVED from now on.
    auto keys = cluster.node(a).command({"CLUSTER", "GETKEYSINSLOT", slot, "100"});
    std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(cluster.node(b).port()), "", "0",
                                     "5000",    "KEYS"};
    std::size_t pos = 0;
    int moved_keys = 0;
    while ((pos = keys.find('$', pos)) != std::string::npos) {
        auto len_end = keys.find("\r\n", pos);
        auto len = std::stoul(keys.substr(pos + 1, len_end - pos - 1));
        migrate.push_back(keys.substr(len_end + 2, len));
        pos = len_end + 2 + len;
        ++moved_keys;
    }
    CHECK(moved_keys == 1); // the first key; the second was created on B
    REQUIRE(cluster.node(a).command(migrate) == "+OK\r\n");
    for (std::size_t i = 0; i < cluster.size(); ++i) {
        auto role = cluster.node(i).command({"ROLE"});
        if (role.find("master") != std::string::npos)
            CHECK(cluster.node(i).command({"CLUSTER", "SETSLOT", slot, "NODE", id_b}) == "+OK\r\n");
    }
    auto after = f.post("/api/orders", tag + "-1", "{}");
    CHECK(after.header("idempotent-replayed") == "true");
    CHECK(after.body == first.body);
    CHECK(f.post("/api/orders", tag + "-3", "{}").status == 201);
    CHECK(metric(f.gateway->admin_port(), "idemgate_redis_cluster_redirects_total{kind=\"moved\"}") >= 1);
    CHECK(f.executions() == 3);
}

TEST_CASE("a killed primary: readyz 503 until its replica is promoted, then keys run and replay again")
{
    gateway_options options;
    options.breaks_store = true;
    options.lock_ttl = "40s";
    // The record must survive the failover: asynchronous replication may lose a write the
    // primary acknowledged (docs/operations/failover.md: min_replicas_ack). A WAIT from the test's own
    // connection would prove nothing: WAIT counts replicas that have *that connection's* last write.
    options.redis_extra =
        "    min_replicas_ack: 1\n    command_timeout: 2s\n    reconnect_backoff_max: 200ms\n";
    gateway_fixture f(options);
    auto& cluster = *f.store.cluster;
    const std::string tag = "{kill" + std::to_string(::getpid()) + "}";
    auto victim = cluster.primary_for(tag);
    auto victim_up = "idemgate_redis_cluster_node_up{node=\"" + cluster.node(victim).address() + "\"}";
    CHECK(metric(f.gateway->admin_port(), victim_up) == 1);

    auto before = f.post("/api/orders", tag + "-before", "{}");
    REQUIRE(before.status == 201);
    REQUIRE(metric(f.gateway->admin_port(), "idemgate_records_unreplicated_total") == 0);

    cluster.node(victim).stop(true);
    auto down = wait_readyz(f, 503, 10s);
    CHECK(down.count() >= 0);
    auto during = f.post("/api/orders", tag + "-during", "{}");
    CHECK((during.status == 201 || is_problem(during, 503))); // before or after the promotion

    auto back = wait_readyz(f, 200, 20s);
    REQUIRE_MESSAGE(back.count() >= 0, "readyz did not come back after the replica's promotion");
    MESSAGE("gap from the kill being noticed to readyz 200: " << back.count() << " ms");
    auto replay = f.post("/api/orders", tag + "-before", "{}");
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.body == before.body);
    auto fresh = f.post("/api/orders", tag + "-after", "{}");
    CHECK(fresh.status == 201);
    auto fresh_again = f.post("/api/orders", tag + "-after", "{}");
    CHECK(fresh_again.header("idempotent-replayed") == "true");

    // The dead node left the slot map: no gauge for it, three primaries up, and no connection
    // keeps reconnecting to it once each I/O thread has run a command under the new map (40
    // requests on new connections reach both threads).
    CHECK(metric(f.gateway->admin_port(), victim_up) < 0);
    auto text = http_request(f.gateway->admin_port(), "GET", "/metrics", {}, {}, 5s).body;
    std::size_t up = 0;
    for (auto pos = text.find("\nidemgate_redis_cluster_node_up{"); pos != std::string::npos;
         pos = text.find("\nidemgate_redis_cluster_node_up{", pos + 1))
        up += text.compare(text.find("} ", pos) + 2, 1, "1") == 0;
    CHECK(up == 3);
    for (int i = 0; i < 40; ++i)
        f.post("/api/orders", tag + "-spread-" + std::to_string(i), "{}");
    auto attempts = metric(f.gateway->admin_port(), "idemgate_redis_reconnect_attempts_total");
    std::this_thread::sleep_for(1500ms); // several 200 ms backoffs: reconnects would show
    CHECK(metric(f.gateway->admin_port(), "idemgate_redis_reconnect_attempts_total") == attempts);
}

TEST_CASE("CLUSTER FAILOVER under load: every key runs once and its retry replays")
{
    gateway_options options;
    options.breaks_store = true;
    gateway_fixture f(options);
    auto& cluster = *f.store.cluster;
    const std::string tag = "{fo" + std::to_string(::getpid()) + "}";
    auto primary = cluster.primary_for(tag);
    // Its replica: the node whose ROLE names the primary's port.
    std::size_t replica = cluster.size();
    for (std::size_t i = 0; i < cluster.size(); ++i) {
        auto role = cluster.node(i).command({"ROLE"});
        if (role.find("slave") != std::string::npos &&
            role.find(std::to_string(cluster.node(primary).port())) != std::string::npos)
            replica = i;
    }
    REQUIRE(replica < cluster.size());

    std::atomic<bool> stop{false};
    std::atomic<int> created{0}, replayed{0}, refused{0}, executed_twice{0}, retries_refused{0};
    std::string other_retries; // what a retry answered when it neither replayed nor ran again
    std::thread load([&] {
        for (int i = 0; !stop; ++i) {
            auto key = tag + "-" + std::to_string(i);
            auto a = f.post("/api/orders", key, "{}");
            if (a.status != 201) {
                refused += is_problem(a, 503) ? 1 : 0;
                continue;
            }
            ++created;
            auto b = f.post("/api/orders", key, "{}");
            // A retry that lands in the failover window is refused like a first request (503
            // store-unavailable: not forwarded, its key could not be reserved); a client retries
            // it later, and so does this.
            for (int tries = 0; is_problem(b, 503) && tries < 100; ++tries) {
                ++retries_refused;
                std::this_thread::sleep_for(20ms);
                b = f.post("/api/orders", key, "{}");
            }
            if (b.header("idempotent-replayed") == "true")
                ++replayed;
            else if (b.status == 201)
                ++executed_twice;
            else
                other_retries += std::to_string(b.status) + " " + b.body.substr(0, 200) + "\n";
        }
    });
    // Keys run before the failover, and after it (counted, not timed: a loaded machine runs fewer
    // requests in a given time). The load thread must be stopped and joined whatever happens.
    CHECK_MESSAGE(poll_until(10s, [&] { return created.load() >= 10; }),
                  "keys created before the failover: " << created.load());
    auto failover = cluster.node(replica).command({"CLUSTER", "FAILOVER"});
    CHECK(failover == "+OK\r\n");
    CHECK(poll_until(
        15s, [&] { return cluster.node(replica).command({"ROLE"}).find("master") != std::string::npos; }));
    const int created_at_promotion = created.load();
    CHECK_MESSAGE(poll_until(15s, [&] { return created.load() >= created_at_promotion + 10; }),
                  "keys created after the promotion: " << created.load() - created_at_promotion);
    stop = true;
    load.join();
    CHECK(cluster.node(replica).command({"ROLE"}).find("master") != std::string::npos);
    MESSAGE("created " << created.load() << ", replayed " << replayed.load() << ", refused " << refused.load()
                       << ", retries refused (then retried) " << retries_refused.load()
                       << "; other retry answers:\n"
                       << other_retries);
    CHECK(created.load() > 10);
    CHECK(executed_twice.load() == 0);
    CHECK(replayed.load() == created.load());
    CHECK(wait_readyz(f, 200, 10s).count() >= 0);
}

TEST_CASE("wait mode uses sharded pub/sub: SSUBSCRIBE on the slot's primary, woken on each of the three; the "
          "local tier's removals stay classic")
{
    auto options = cluster_wait_options();
    // With the local tier on, its removal channel stays on classic pub/sub beside the shards.
    options.store_extra = "  local_tier:\n    max_bytes: 1MiB\n    max_age: 10s\n";
    gateway_fixture f(options);
    auto& cluster = *f.store.cluster;
    auto prefix_at = f.store.yaml.find("key_prefix: ");
    REQUIRE(prefix_at != std::string::npos);
    prefix_at += 12;
    const auto removal_channel =
        f.store.yaml.substr(prefix_at, f.store.yaml.find('\n', prefix_at) - prefix_at) + ":removed";
    std::vector<std::size_t> primaries;
    for (std::size_t i = 0; i < cluster.size(); ++i)
        if (cluster.node(i).command({"ROLE"}).find("master") != std::string::npos)
            primaries.push_back(i);
    REQUIRE(primaries.size() == 3);
    int round = 0;
    for (auto p : primaries) {
        CAPTURE(p);
        const auto tag = tag_on(cluster, p, "shard" + std::to_string(round++));
        const auto key = tag + "-k";
        http_response first;
        std::jthread lead([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1000"}}); });
        REQUIRE(f.wait_for_executions(round));
        http_response dup;
        auto started = std::chrono::steady_clock::now();
        auto waited = 0ms;
        std::jthread waiter([&] {
            dup = waiting_post(f, key);
            waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
        });
        // While the duplicate waits: a sharded subscription on the slot's primary, no classic one.
        auto channel = wait_shard_channel(cluster, p, tag, 900ms);
        REQUIRE_MESSAGE(!channel.empty(), "no sharded subscription on the key's primary");
        CHECK(numsub_count(cluster.node(p).command({"PUBSUB", "SHARDNUMSUB", channel})) == 1);
        for (auto other : primaries) {
            CHECK(numsub_count(cluster.node(other).command({"PUBSUB", "NUMSUB", channel})) == 0);
            if (other != p)
                CHECK(shard_channel_with(cluster, other, tag).empty());
        }
        waiter.join();
        lead.join();
        REQUIRE(first.status == 201);
        CHECK(dup.status == 201);
        CHECK(dup.body == first.body);
        CHECK(dup.header("idempotent-replayed") == "true");
        CHECK(waited < 5s); // woken by the SPUBLISH of the complete script, not by the 10 s deadline
        // The last waiter gone, the subscription goes too.
        auto start = std::chrono::steady_clock::now();
        while (!shard_channel_with(cluster, p, tag).empty() && std::chrono::steady_clock::now() - start < 2s)
            std::this_thread::sleep_for(10ms); // polling the server's pub/sub state
        CHECK(shard_channel_with(cluster, p, tag).empty());
    }
    CHECK(f.executions() == 3);
    CHECK(metric(f.gateway->admin_port(), "idemgate_waits_total{result=\"settled\"}") == 3);
    // One classic SUBSCRIBE to the removal channel, on some node (made at start-up, in the
    // background: polled).
    long long removal_subscribers = 0;
    auto since = std::chrono::steady_clock::now();
    do {
        removal_subscribers = 0;
        for (std::size_t i = 0; i < cluster.size(); ++i)
            removal_subscribers +=
                numsub_count(cluster.node(i).command({"PUBSUB", "NUMSUB", removal_channel}));
        if (removal_subscribers != 1)
            std::this_thread::sleep_for(20ms); // polling the server's pub/sub state
    } while (removal_subscribers != 1 && std::chrono::steady_clock::now() - since < 2s);
    CHECK(removal_subscribers == 1);
}

TEST_CASE(
    "a slot moved while a duplicate waits: the gateway subscribes on the new primary, the waiter is woken")
{
    auto options = cluster_wait_options();
    options.breaks_store = true; // it moves a slot: a cluster of its own
    gateway_fixture f(options);
    auto& cluster = *f.store.cluster;
    auto a = cluster.primary_for("x");
    const auto tag = tag_on(cluster, a, "wmove");
    auto b = cluster.other_primary(a);
    auto slot = std::to_string(resp_integer(cluster.node(0).command({"CLUSTER", "KEYSLOT", tag})));
    auto id_a = cluster.id_of(a);
    auto id_b = cluster.id_of(b);
    const auto key = tag + "-k";

    http_response first;
    std::jthread lead([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "2500"}}); });
    REQUIRE(f.wait_for_executions(1));
    http_response dup;
    auto started = std::chrono::steady_clock::now();
    auto waited = 0ms;
    std::jthread waiter([&] {
        dup = waiting_post(f, key);
        waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
    });
    auto channel = wait_shard_channel(cluster, a, tag, 1s);
    REQUIRE_MESSAGE(!channel.empty(), "no sharded subscription on the key's primary");

    // Move the slot (with the in-flight record) from A to B while the duplicate waits.
    REQUIRE(cluster.node(b).command({"CLUSTER", "SETSLOT", slot, "IMPORTING", id_a}) == "+OK\r\n");
    REQUIRE(cluster.node(a).command({"CLUSTER", "SETSLOT", slot, "MIGRATING", id_b}) == "+OK\r\n");
    auto keys = cluster.node(a).command({"CLUSTER", "GETKEYSINSLOT", slot, "100"});
    std::vector<std::string> migrate{"MIGRATE", "127.0.0.1", std::to_string(cluster.node(b).port()), "", "0",
                                     "5000",    "KEYS"};
    std::size_t pos = 0;
    while ((pos = keys.find('$', pos)) != std::string::npos) {
        auto len_end = keys.find("\r\n", pos);
        auto len = std::stoul(keys.substr(pos + 1, len_end - pos - 1));
        migrate.push_back(keys.substr(len_end + 2, len));
        pos = len_end + 2 + len;
    }
    REQUIRE(migrate.size() == 8); // the in-flight record
    REQUIRE(cluster.node(a).command(migrate) == "+OK\r\n");
    for (std::size_t i = 0; i < cluster.size(); ++i) {
        if (cluster.node(i).command({"ROLE"}).find("master") != std::string::npos)
            CHECK(cluster.node(i).command({"CLUSTER", "SETSLOT", slot, "NODE", id_b}) == "+OK\r\n");
    }
    // A dropped the sharded subscription with the slot; the gateway subscribes again on B.
    CHECK(wait_shard_channel(cluster, b, tag, 2s) == channel);
    CHECK(shard_channel_with(cluster, a, tag).empty());

    waiter.join();
    lead.join();
    REQUIRE(first.status == 201);
    CHECK(dup.status == 201); // woken by the SPUBLISH on B
    CHECK(dup.body == first.body);
    CHECK(dup.header("idempotent-replayed") == "true");
    CHECK(waited < 8s); // before the 10 s wait_timeout: the notification, not the deadline
    CHECK(f.executions() == 1);
}

TEST_CASE("wait mode: the sharded subscriber connection killed while a duplicate waits is reopened, the "
          "waiter woken")
{
    gateway_fixture f(cluster_wait_options());
    auto& cluster = *f.store.cluster;
    auto p = cluster.primary_for("y");
    const auto tag = tag_on(cluster, p, "wkill");
    const auto key = tag + "-k";
    http_response first;
    std::jthread lead([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "2000"}}); });
    REQUIRE(f.wait_for_executions(1));
    http_response dup;
    auto started = std::chrono::steady_clock::now();
    auto waited = 0ms;
    std::jthread waiter([&] {
        dup = waiting_post(f, key);
        waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
    });
    auto channel = wait_shard_channel(cluster, p, tag, 1s);
    REQUIRE_MESSAGE(!channel.empty(), "no sharded subscription on the key's primary");
    // Every subscriber connection on that node goes (the gateway's among them).
    auto killed = resp_integer(cluster.node(p).command({"CLIENT", "KILL", "TYPE", "pubsub"}));
    CHECK(killed >= 1);
    // The gateway connects again and subscribes again.
    CHECK(wait_shard_channel(cluster, p, tag, 1500ms) == channel);
    waiter.join();
    lead.join();
    REQUIRE(first.status == 201);
    CHECK(dup.status == 201);
    CHECK(dup.body == first.body);
    CHECK(dup.header("idempotent-replayed") == "true");
    CHECK(waited < 8s); // the notification, not the 10 s wait_timeout
    CHECK(f.executions() == 1);
}

TEST_CASE("wait mode: CLUSTER FAILOVER of the key's primary while a duplicate waits: subscribed on the new "
          "primary, woken")
{
    auto options = cluster_wait_options();
    options.breaks_store = true; // it fails a primary over: a cluster of its own
    options.redis_extra = "    reconnect_backoff_max: 200ms\n";
    gateway_fixture f(options);
    auto& cluster = *f.store.cluster;
    auto a = cluster.primary_for("z");
    const auto tag = tag_on(cluster, a, "wfail");
    const auto key = tag + "-k";
    // A's replica: the node whose ROLE names A's port as its primary.
    std::size_t replica = cluster.size();
    for (std::size_t i = 0; i < cluster.size(); ++i) {
        auto role = cluster.node(i).command({"ROLE"});
        if (role.find("slave") != std::string::npos &&
            role.find(":" + std::to_string(cluster.node(a).port()) + "\r\n") != std::string::npos)
            replica = i;
    }
    REQUIRE(replica < cluster.size());

    http_response first;
    std::jthread lead([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "3000"}}); });
    REQUIRE(f.wait_for_executions(1));
    http_response dup;
    auto started = std::chrono::steady_clock::now();
    auto waited = 0ms;
    std::jthread waiter([&] {
        dup = waiting_post(f, key);
        waited = std::chrono::duration_cast<milliseconds>(std::chrono::steady_clock::now() - started);
    });
    auto channel = wait_shard_channel(cluster, a, tag, 1s);
    REQUIRE_MESSAGE(!channel.empty(), "no sharded subscription on the key's primary");

    REQUIRE(cluster.node(replica).command({"CLUSTER", "FAILOVER"}) == "+OK\r\n");
    // The replica takes over the slot; the gateway subscribes there (MOVED or the new map).
    // Redis keeps a sharded subscription on a primary demoted to a replica of its shard (and
    // SPUBLISH reaches every node of the shard); otherwise it drops it and the gateway
    // subscribes on the new primary. Either way the subscription stays in the key's shard.
    auto deadline = std::chrono::steady_clock::now() + 2500ms;
    bool in_shard = false;
    while (!in_shard && std::chrono::steady_clock::now() < deadline) {
        in_shard = cluster.node(replica).command({"ROLE"}).find("master") != std::string::npos &&
                   (shard_channel_with(cluster, replica, tag) == channel ||
                    shard_channel_with(cluster, a, tag) == channel);
        if (!in_shard)
            std::this_thread::sleep_for(20ms); // polling the failover and pub/sub state
    }
    CHECK(in_shard);

    waiter.join();
    lead.join();
    REQUIRE(first.status == 201);
    CHECK(dup.status == 201); // woken by the SPUBLISH on the new primary
    CHECK(dup.body == first.body);
    CHECK(dup.header("idempotent-replayed") == "true");
    CHECK(waited < 8s); // the notification, not the 10 s wait_timeout
    CHECK(f.executions() == 1);

    // A new wait on that slot subscribes on the new primary (the map followed the failover).
    const auto key2 = tag + "-after";
    http_response first2;
    std::jthread lead2([&] { first2 = f.post("/api/orders", key2, "{}", {{"X-Test-Delay-Ms", "1000"}}); });
    REQUIRE(f.wait_for_executions(2));
    http_response dup2;
    std::jthread waiter2([&] { dup2 = waiting_post(f, key2); });
    CHECK(!wait_shard_channel(cluster, replica, key2, 900ms).empty());
    waiter2.join();
    lead2.join();
    REQUIRE(first2.status == 201);
    CHECK(dup2.status == 201);
    CHECK(dup2.body == first2.body);
    CHECK(f.executions() == 2);
}

TEST_CASE("wait mode: SIGTERM while a duplicate waits on a sharded subscription drains and exits 0")
{
    gateway_fixture f(cluster_wait_options());
    auto& cluster = *f.store.cluster;
    auto p = cluster.primary_for("w");
    const auto tag = tag_on(cluster, p, "wterm");
    const auto key = tag + "-k";
    http_response first;
    std::jthread lead([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1000"}}); });
    REQUIRE(f.wait_for_executions(1));
    http_response dup;
    std::jthread waiter([&] { dup = waiting_post(f, key); });
    REQUIRE(!wait_shard_channel(cluster, p, tag, 900ms).empty());
    f.process().signal(SIGTERM);
    // Under the sanitizers any report at shutdown aborts: a non-zero exit.
    CHECK(f.process().wait_exit(15s) == 0);
    waiter.join();
    lead.join();
    CHECK(first.status == 201);
    CHECK(dup.status == 201); // the drain lets both answer
}

TEST_SUITE_END();
