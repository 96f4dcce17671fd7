// Redis Cluster routing pieces: key slots, redirect parsing, and the slot map read from a real
// cluster's CLUSTER SHARDS.
#include "redis_cluster.hpp"

#include <doctest/doctest.h>
#include <hiredis/hiredis.h>
#include <idemgate/test/harness.hpp>

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

TEST_SUITE_END();
