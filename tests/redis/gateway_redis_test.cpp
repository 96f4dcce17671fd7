// SPDX-License-Identifier: Apache-2.0
// The real idemgate binary over a real Redis: shared state between instances and
// across restarts, fail-closed when Redis dies, and locks left by a killed gateway.
#include "redis_test_support.hpp"

#include <atomic>
#include <doctest/doctest.h>
#include <idemgate/test/harness.hpp>
#include <map>
#include <mutex>
#include <signal.h>
#include <thread>
#include <unistd.h>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

std::string redis_gateway_yaml(const redis_server& redis, const test_upstream_process& upstream,
                               const std::string& lock_ttl = "30s", const std::string& on_failure = "reject")
{
    return "listen: \"${LISTEN}\"\n"
           "admin_listen: \"${ADMIN}\"\n"
           "threads: 2\n"
           "access_log: false\n"
           "store:\n"
           "  type: redis\n"
           "  on_failure: " +
           on_failure +
           "\n"
           "  redis:\n"
           "    address: \"" +
           redis.address() +
           "\"\n"
           "    key_prefix: gw\n"
           "    command_timeout: 250ms\n"
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
           "      lock_ttl: " +
           lock_ttl +
           "\n"
           "      record_ttl: 1h\n";
}

} // namespace

TEST_SUITE("gateway over redis")
{

    TEST_CASE("a duplicate sent to another gateway instance on the same Redis is replayed")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto yaml = redis_gateway_yaml(redis, upstream);
        auto first_gw = start_gateway(yaml);
        auto second_gw = start_gateway(yaml);

        auto key = unique_key("order");
        auto first = post(*first_gw, key, R"({"item":"book"})");
        REQUIRE(first.status == 201);
        auto replay = post(*second_gw, key, R"({"item":"book"})");
        CHECK(replay.status == 201);
        CHECK(replay.body == first.body);
        CHECK(replay.header("idempotent-replayed") == "true");
        CHECK(post(*second_gw, key, R"({"item":"lamp"})").status == 409);
        CHECK(upstream.executions() == 1);
    }

    TEST_CASE("a gateway restart keeps every finished record")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto yaml = redis_gateway_yaml(redis, upstream);
        std::map<std::string, std::string> bodies;
        {
            auto gw = start_gateway(yaml);
            for (int i = 0; i < 5; ++i) {
                auto key = unique_key("restart");
                auto res = post(*gw, key, "{\"n\":" + std::to_string(i) + "}");
                REQUIRE(res.status == 201);
                bodies[key] = res.body;
            }
            gw->process().signal(SIGTERM);
            CHECK(gw->process().wait_exit(10s));
        }
        auto gw = start_gateway(yaml);
        int n = 0;
        for (const auto& [key, body] : bodies) {
            auto res = post(*gw, key, "{\"n\":" + std::to_string(n++) + "}");
            CHECK(res.status == 201);
            CHECK(res.body == body);
            CHECK(res.header("idempotent-replayed") == "true");
        }
        CHECK(upstream.executions() == 5);
    }

    TEST_CASE("Redis killed while requests flow: 503 without calling the upstream, then recovery")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto gw = start_gateway(redis_gateway_yaml(redis, upstream));

        // One client sends new keys in a loop the whole time; every answer is recorded.
        std::atomic<bool> stop{false};
        std::mutex mutex;
        std::map<int, int> statuses;
        std::atomic<int> created{0}, refused{0};
        std::thread client([&] {
            for (int i = 0; i < 100000 && !stop; ++i) {
                int status = 0;
                try {
                    status = post(*gw, unique_key("flow"), "{}").status;
                } catch (const std::exception&) {
                    status = -1;
                }
                std::lock_guard lock(mutex);
                ++statuses[status];
                if (status == 201)
                    ++created;
                if (status == 503)
                    ++refused;
            }
        });

        CHECK(eventually([&] { return created >= 20; }, 10s));
        redis.stop(true);
        CHECK(eventually([&] { return readyz(*gw) == 503; }, 5s));
        int created_while_down = created;
        CHECK(eventually([&] { return refused >= 20; }, 10s));
        int created_after_refusals = created;
        redis.start();
        CHECK(eventually([&] { return readyz(*gw) == 200; }, 10s));
        CHECK(eventually([&] { return created >= created_after_refusals + 20; }, 10s));
        stop = true;
        client.join();

        std::lock_guard lock(mutex);
        // Requests already past reserve when Redis died may still finish; none start while it is down.
        CHECK(created_after_refusals - created_while_down <= 4);
        for (const auto& [status, count] : statuses) {
            INFO("status " << status << " x" << count);
            CHECK((status == 201 || status == 503));
        }
        // Every 201 ran the upstream once; no 503 reached it.
        CHECK(upstream.executions() == statuses[201]);
    }

    TEST_CASE("a gateway killed mid-request leaves a lock: 409 until lock_ttl, then the key runs again")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto yaml = redis_gateway_yaml(redis, upstream, "1500ms");
        auto doomed = start_gateway(yaml);
        auto survivor = start_gateway(yaml);
        auto key = unique_key("killed");

        std::thread in_flight([&] {
            try {
                post(*doomed, key, "{}", {{"X-Test-Delay-Ms", "10000"}});
            } catch (const std::exception&) {
                // the gateway dies under this request
            }
        });
        REQUIRE(eventually([&] { return upstream.executions() == 1; }, 5s));
        doomed->process().signal(SIGKILL);
        doomed->process().wait_exit(5s);
        in_flight.join();

        auto during = post(*survivor, key, "{}");
        CHECK(during.status == 409);
        CHECK(upstream.executions() == 1);

        auto redis_key = "gw::" + key;
        auto pttl = redis.command({"PTTL", redis_key});
        CHECK(pttl.starts_with(":"));
        CHECK(eventually([&] { return redis.command({"EXISTS", redis_key}) == ":0\r\n"; }, 5s));

        auto after = post(*survivor, key, "{}");
        CHECK(after.status == 201);
        CHECK(after.header("idempotent-replayed") != "true");
        CHECK(upstream.executions() == 2);
    }

} // TEST_SUITE

TEST_SUITE("gateway over redis")
{

    TEST_CASE("a late complete after the lock expired does not overwrite the next owner's record")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto yaml = redis_gateway_yaml(redis, upstream, "1s");
        auto slow_gw = start_gateway(yaml);
        auto other_gw = start_gateway(yaml);
        auto key = unique_key("late");
        auto redis_key = "gw::" + key;

        http_response slow;
        std::thread slow_client([&] {
            try {
                slow = post(*slow_gw, key, "{}", {{"X-Test-Delay-Ms", "2500"}});
            } catch (const std::exception&) {
            }
        });
        REQUIRE(eventually([&] { return upstream.executions() == 1; }, 5s));
        // The slow request's reservation expires while its upstream call is still running.
        REQUIRE(eventually([&] { return redis.command({"EXISTS", redis_key}) == ":0\r\n"; }, 5s));
        auto next = post(*other_gw, key, "{}");
        CHECK(next.status == 201);
        CHECK(next.header("idempotent-replayed") != "true");
        slow_client.join();
        CHECK(slow.status == 201); // the slow client still gets its upstream's answer

        auto replay = post(*other_gw, key, "{}");
        CHECK(replay.header("idempotent-replayed") == "true");
        CHECK(replay.body == next.body); // the record is the second owner's, not the late one
        CHECK(replay.body != slow.body);
        CHECK(upstream.executions() == 2);
    }

} // TEST_SUITE

TEST_SUITE("gateway over redis")
{

    TEST_CASE("Redis answering OOM at reserve: 503 without calling the upstream, then normal again")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto gw = start_gateway(redis_gateway_yaml(redis, upstream));
        REQUIRE(post(*gw, unique_key("before"), "{}").status == 201);
        CHECK(eventually(
            [&] {
                auto metrics = http_request(gw->admin_port(), "GET", "/metrics", {}, {}, 2s);
                return metrics.body.find("\nidemgate_redis_eviction_safe 1\n") != std::string::npos;
            },
            5s));

        REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "1"}) == "+OK\r\n");
        auto refused = post(*gw, unique_key("oom"), "{}");
        CHECK(refused.status == 503);
        CHECK(refused.header("content-type").find("problem+json") != std::string::npos);
        CHECK(upstream.executions() == 1);
        // The operator sees what Redis said.
        auto logged = gw->process().wait_for_line(
            [](const std::string& line) {
                return line.find("\"reply\":\"OOM command not allowed") != std::string::npos;
            },
            5s);
        CHECK_MESSAGE(logged, gw->process().output());

        REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "0"}) == "+OK\r\n");
        // Normal again at once, or after the store's next health round (1 s) when its command
        // check (which runs again after the start-up connects) met the OOM too: either way a
        // refused key never reaches the upstream.
        CHECK(eventually([&] { return post(*gw, unique_key("after"), "{}").status == 201; }, 5s));
        CHECK(upstream.executions() == 2);
    }

    TEST_CASE("on_failure pass_through forwards unprotected while Redis is down and counts it")
    {
        redis_server redis;
        test_upstream_process upstream;
        auto gw = start_gateway(redis_gateway_yaml(redis, upstream, "30s", "pass_through"));
        redis.stop(true);
        REQUIRE(eventually([&] { return readyz(*gw) == 503; }, 5s));

        auto key = unique_key("bypass");
        CHECK(post(*gw, key, "{}").status == 201);
        CHECK(post(*gw, key, "{}").status == 201); // unprotected: the duplicate runs too
        CHECK(upstream.executions() == 2);
        auto metrics = http_request(gw->admin_port(), "GET", "/metrics", {}, {}, 2s);
        CHECK(metrics.body.find("idemgate_store_bypassed_total 2") != std::string::npos);
    }

} // TEST_SUITE
