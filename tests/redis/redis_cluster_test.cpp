// SPDX-License-Identifier: Apache-2.0
// Redis Cluster routing pieces: key slots, redirect parsing, and the slot map read from a real
// cluster's CLUSTER SHARDS.
#include "redis/client/redis_cluster.hpp"
#include "redis/client/shard_subscriber.hpp"

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <doctest/doctest.h>
#include <functional>
#include <hiredis/hiredis.h>
#include <idemgate/test/harness.hpp>
#include <unistd.h>

using namespace idemgate::store::detail;

TEST_SUITE_BEGIN("redis-cluster");

TEST_CASE("key slots follow the cluster spec: CRC16 XMODEM mod 16384, hash tags")
{
    CHECK(cluster_slot("123456789") == 0x31C3 % 16384); // the spec's CRC16 check value
    CHECK(cluster_slot("foo") == 12182);                // CLUSTER KEYSLOT foo
    CHECK(cluster_slot("{user1000}.following") == cluster_slot("{user1000}.followers"));
    CHECK(cluster_slot("{user1000}.following") == cluster_slot("user1000"));
    CHECK(cluster_slot("foo{}{bar}") == cluster_slot("foo{}{bar}")); // empty tag: whole key
    CHECK(cluster_slot("foo{}{bar}") != cluster_slot("bar"));
    CHECK(cluster_slot("foo{{bar}}zap") == cluster_slot("{bar"));
    CHECK(cluster_slot("foo{bar}{zap}") == cluster_slot("bar"));
}

TEST_CASE("MOVED and ASK replies parse; anything else does not")
{
    auto moved = parse_redirect("MOVED 3999 127.0.0.1:6381");
    REQUIRE(moved);
    CHECK_FALSE(moved->ask);
    CHECK(moved->slot == 3999);
    CHECK(moved->to.host == "127.0.0.1");
    CHECK(moved->to.port == 6381);
    auto ask = parse_redirect("ASK 0 ::1:7000");
    REQUIRE(ask);
    CHECK(ask->ask);
    CHECK(ask->to.host == "::1");
    CHECK_FALSE(parse_redirect("TRYAGAIN Multiple keys request during rehashing of slot"));
    CHECK_FALSE(parse_redirect("CLUSTERDOWN The cluster is down"));
    CHECK_FALSE(parse_redirect("MOVED 16384 127.0.0.1:1"));
    CHECK_FALSE(parse_redirect("MOVED 1 127.0.0.1"));
    CHECK_FALSE(parse_redirect("MOVED x 127.0.0.1:1"));
    CHECK_FALSE(parse_redirect("MOVED 1 127.0.0.1:0"));
}

TEST_CASE("the slot map of a real 3 + 3 cluster covers every slot with its three primaries")
{
    idemgate::test::redis_cluster cluster;
    // Read CLUSTER SHARDS with hiredis' blocking client.
    redisContext* c = redisConnect("127.0.0.1", cluster.node(0).port());
    REQUIRE(c != nullptr);
    REQUIRE(c->err == 0);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "CLUSTER SHARDS"));
    REQUIRE(reply != nullptr);
    std::string why;
    auto map = parse_cluster_shards(*reply, why);
    freeReplyObject(reply);
    redisFree(c);
    REQUIRE_MESSAGE(map, why);
    CHECK(map->primaries.size() == 3);
    CHECK(map->covered_slots() == cluster_slots);
    for (bool online : map->online)
        CHECK(online);
    // The node the map names for a key's slot is the one that serves it.
    const auto* owner = map->node_for(cluster_slot("some-key"));
    REQUIRE(owner != nullptr);
    auto served_by = cluster.primary_for("some-key");
    CHECK(owner->port == cluster.node(served_by).port());
}

TEST_CASE(
    "shard_subscriber: SSUBSCRIBE on a stale map's node follows MOVED; SPUBLISH wakes; the last waiter gone, "
    "so is the subscription")
{
    using namespace std::chrono_literals;
    idemgate::test::redis_cluster cluster;
    redisContext* c = redisConnect("127.0.0.1", cluster.node(0).port());
    REQUIRE(c != nullptr);
    REQUIRE(c->err == 0);
    auto* reply = static_cast<redisReply*>(redisCommand(c, "CLUSTER SHARDS"));
    REQUIRE(reply != nullptr);
    std::string why;
    auto map = parse_cluster_shards(*reply, why);
    freeReplyObject(reply);
    redisFree(c);
    REQUIRE_MESSAGE(map, why);

    const std::string channel = "spub-unit-" + std::to_string(::getpid());
    auto owner = cluster.primary_for(channel);
    auto wrong = cluster.other_primary(owner);
    // A stale map: the channel's slot on another primary (which answers MOVED).
    auto slot = cluster_slot(channel);
    for (std::size_t i = 0; i < map->primaries.size(); ++i)
        if (map->primaries[i].port == cluster.node(wrong).port())
            map->owner[slot] = static_cast<std::int16_t>(i);
    REQUIRE(map->node_for(slot)->port == cluster.node(wrong).port());

    idemgate::config::redis_config cfg;
    cfg.mode = idemgate::config::redis_mode::cluster;
    cfg.nodes.push_back({"127.0.0.1", cluster.node(0).port()});
    cfg.command_timeout = std::chrono::milliseconds(1000);
    auto topology = std::make_shared<cluster_topology>(cfg.nodes);
    topology->replace(*map);
    auto shared = std::make_shared<redis_shared>(cfg, idemgate::store::redis_options{});
    boost::asio::io_context io;
    auto subscriber =
        std::make_shared<shard_subscriber>(io.get_executor(), shared, shared->notifier, topology);
    subscriber->start();
    auto run_until = [&](const std::function<bool()>& done) {
        auto deadline = std::chrono::steady_clock::now() + 5s;
        while (!done() && std::chrono::steady_clock::now() < deadline)
            io.run_for(10ms);
        return done();
    };
    auto shard_subscribers = [&](std::size_t node) {
        auto r = cluster.node(node).command({"PUBSUB", "SHARDNUMSUB", channel});
        return std::stoll(r.substr(r.rfind(':') + 1));
    };

    auto registration = shared->notifier.watch(channel, io.get_executor());
    auto& w = registration->get();
    CHECK_FALSE(w.active);
    REQUIRE(run_until([&] { return w.active; })); // confirmed on the slot's primary
    CHECK(shared->stats.cluster_moved.load() == 1);
    CHECK(topology->map()->node_for(slot)->port == cluster.node(owner).port()); // the map was patched
    CHECK(shard_subscribers(owner) == 1);
    CHECK(shard_subscribers(wrong) == 0);

    w.woken = false;
    CHECK(cluster.node(owner).command({"SPUBLISH", channel, "c"}) == ":1\r\n");
    CHECK(run_until([&] { return w.woken; }));

    // The slot moves to the other primary: the old owner drops the subscription (a
    // "sunsubscribe" push); the subscriber subscribes again where the slot lives now (its map
    // still names the old owner, which answers MOVED).
    auto slot_text = std::to_string(slot);
    auto id_from = cluster.id_of(owner);
    auto id_to = cluster.id_of(wrong);
    REQUIRE(cluster.node(wrong).command({"CLUSTER", "SETSLOT", slot_text, "IMPORTING", id_from}) ==
            "+OK\r\n");
    REQUIRE(cluster.node(owner).command({"CLUSTER", "SETSLOT", slot_text, "MIGRATING", id_to}) == "+OK\r\n");
    for (std::size_t i = 0; i < cluster.size(); ++i)
        if (cluster.node(i).command({"ROLE"}).find("master") != std::string::npos)
            REQUIRE(cluster.node(i).command({"CLUSTER", "SETSLOT", slot_text, "NODE", id_to}) == "+OK\r\n");
    CHECK(run_until([&] { return shard_subscribers(wrong) == 1 && w.active; }));
    CHECK(shard_subscribers(owner) == 0);
    CHECK(shared->stats.cluster_moved.load() == 2);
    w.woken = false;
    CHECK(cluster.node(wrong).command({"SPUBLISH", channel, "c"}) == ":1\r\n");
    CHECK(run_until([&] { return w.woken; }));

    registration.reset();
    CHECK(run_until([&] { return shard_subscribers(wrong) == 0; }));
    subscriber->shutdown();
    io.run_for(50ms);
}

TEST_SUITE_END();
