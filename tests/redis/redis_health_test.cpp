// SPDX-License-Identifier: Apache-2.0
// The Redis store's health as the real idemgate binary shows it: the command check at start (a
// command the ACL refuses keeps the gateway not ready and is named), the smallest ACL of
// docs/operations/redis.md with what it leaves unknown, and which error replies count as
// refusals.
#include "redis/redis_health.hpp"
#include "redis_test_support.hpp"

#include <doctest/doctest.h>
#include <idemgate/test/harness.hpp>

using namespace idemgate;
using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

std::string acl_yaml(const redis_server& redis, const test_upstream_process& upstream,
                     const std::string& extra = {})
{
    return "listen: \"${LISTEN}\"\n"
           "admin_listen: \"${ADMIN}\"\n"
           "threads: 2\n"
           "access_log: false\n"
           "store:\n"
           "  type: redis\n"
           "  redis:\n"
           "    address: \"" +
           redis.address() +
           "\"\n"
           "    key_prefix: gw\n"
           "    username: idemgate\n"
           "    password_env: IDEMGATE_TEST_REDIS_PASSWORD\n"
           "    reconnect_backoff_max: 200ms\n"
           "upstreams:\n"
           "  orders:\n"
           "    address: \"" +
           upstream.address() +
           "\"\n"
           "routes:\n"
           "  - path_prefix: \"/api/\"\n"
           "    upstream: orders\n"
           "    idempotency:\n"
           "      record_ttl: 1h\n" +
           extra;
}

struct readyz_answer {
    int status = 0;
    std::string body;
};

readyz_answer readyz_of(const gateway_process& gw)
{
    try {
        auto res = http_request(gw.admin_port(), "GET", "/readyz", {}, {}, 1s);
        return {res.status, res.body};
    } catch (const std::exception&) {
        return {};
    }
}

std::vector<std::string> smallest_acl(std::vector<std::string> more = {})
{
    // docs/operations/redis.md, "Redis: encryption, hashed keys, ACL user".
    std::vector<std::string> acl{"ACL",   "SETUSER",       "idemgate", "on",    ">gw-password",
                                 "~gw:*", "resetchannels", "-@all",    "+get",  "+set",
                                 "+del",  "+pttl",         "+evalsha", "+eval", "+ping"};
    acl.insert(acl.end(), more.begin(), more.end());
    return acl;
}

} // namespace

TEST_SUITE("redis health")
{

    TEST_CASE("which error replies count towards the refusing state")
    {
        using store::detail::classify_refusal;
        using store::detail::refusal_kind;
        CHECK(classify_refusal("NOPERM this user has no permissions to run the 'evalsha' command", false) ==
              refusal_kind::noperm);
        CHECK(classify_refusal("READONLY You can't write against a read only replica.", false) ==
              refusal_kind::readonly);
        CHECK(classify_refusal("OOM command not allowed when used memory > 'maxmemory'.", false) ==
              refusal_kind::oom);
        CHECK(classify_refusal("NOSCRIPT No matching script.", false) == refusal_kind::noscript);
        CHECK(classify_refusal("ERR Error running script", false) == refusal_kind::other);
        // A store that is moving is unreachable for now, not refusing.
        for (const char* moving :
             {"MOVED 3999 127.0.0.1:7001", "ASK 3999 127.0.0.1:7001", "TRYAGAIN",
              "CLUSTERDOWN The cluster is down", "LOADING Redis is loading",
              "BUSY Redis is busy running a script", "MASTERDOWN Link with MASTER is down"})
            CHECK_FALSE(classify_refusal(moving, false));
        // Sentinel mode follows a demoted primary instead.
        CHECK_FALSE(classify_refusal("READONLY You can't write against a read only replica.", true));
    }

    TEST_CASE("a command the ACL refuses keeps the gateway not ready, named; allowed, it is ready by itself")
    {
        redis_server redis;
        test_upstream_process upstream;
        // No EVAL: the check's release script is refused (EVALSHA alone would fail after NOSCRIPT).
        auto acl = smallest_acl();
        acl.erase(std::find(acl.begin(), acl.end(), "+eval"));
        REQUIRE(redis.command(acl) == "+OK\r\n"); // the default user stays on: the test grants with it
        gateway_process gw(acl_yaml(redis, upstream), {{"IDEMGATE_TEST_REDIS_PASSWORD", "gw-password"}});
        auto named = gw.process().wait_for_line(
            [](const std::string& l) {
                return l.find("redis refused a command the store needs") != std::string::npos;
            },
            5s);
        REQUIRE_MESSAGE(named, gw.process().output());
        CHECK(named->find("\"command\":\"EVAL\"") != std::string::npos);
        CHECK(named->find("NOPERM") != std::string::npos);
        auto r = readyz_of(gw);
        CHECK(r.status == 503);
        CHECK(r.body.find("command refused: EVAL answered NOPERM") != std::string::npos);
        // Nothing runs while a command the first execution needs is refused.
        auto refused =
            http_request(gw.port(), "POST", "/api/orders", {{"Idempotency-Key", "acl-check-1"}}, "{}", 5s);
        CHECK(refused.status == 503);
        CHECK(upstream.executions() == 0);

        REQUIRE(redis.command({"ACL", "SETUSER", "idemgate", "+eval"}) == "+OK\r\n");
        CHECK(eventually([&] { return readyz_of(gw).status == 200; }, 10s));
        CHECK(http_request(gw.port(), "POST", "/api/orders", {{"Idempotency-Key", "acl-check-2"}}, "{}", 5s)
                  .status == 201);
    }

    TEST_CASE("the smallest ACL: ready, the check passes, policy and persistence unknown and said so")
    {
        redis_server redis;
        test_upstream_process upstream;
        REQUIRE(redis.command(smallest_acl()) == "+OK\r\n");
        REQUIRE(redis.command({"ACL", "SETUSER", "default", "off"}) == "+OK\r\n");
        gateway_process gw(acl_yaml(redis, upstream), {{"IDEMGATE_TEST_REDIS_PASSWORD", "gw-password"}});
        REQUIRE_MESSAGE(eventually([&] { return readyz_of(gw).status == 200; }, 10s), gw.process().output());
        auto r = readyz_of(gw);
        CHECK(r.body.find("note: maxmemory-policy unknown") != std::string::npos);
        CHECK(r.body.find("note: persistence unknown") != std::string::npos);
        auto metrics = http_request(gw.admin_port(), "GET", "/metrics").body;
        CHECK(metrics.find("\nidemgate_redis_persistence -1\n") != std::string::npos);
        CHECK(metrics.find("\nidemgate_redis_eviction_safe -1\n") != std::string::npos);
        CHECK(gw.process().output().find("redis refused a command") == std::string::npos);
        CHECK(http_request(gw.port(), "POST", "/api/orders", {{"Idempotency-Key", "smallest-acl"}}, "{}", 5s)
                  .status == 201);
    }

    TEST_CASE("wait mode's smallest ACL: the check's scripts publish on the probe key's channel")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto acl = smallest_acl({"+publish", "+subscribe", "+unsubscribe", "&gw:*"});
        acl.erase(std::find(acl.begin(), acl.end(), "resetchannels"));
        REQUIRE(redis.command(acl) == "+OK\r\n");
        REQUIRE(redis.command({"ACL", "SETUSER", "default", "off"}) == "+OK\r\n");
        gateway_process gw(acl_yaml(redis, upstream, "      on_in_flight: wait\n"),
                           {{"IDEMGATE_TEST_REDIS_PASSWORD", "gw-password"}});
        REQUIRE_MESSAGE(eventually([&] { return readyz_of(gw).status == 200; }, 10s), gw.process().output());
        CHECK(gw.process().output().find("redis refused a command") == std::string::npos);
    }

} // TEST_SUITE
