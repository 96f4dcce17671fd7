// SPDX-License-Identifier: Apache-2.0
// The Redis store against a real redis-server (harness): reserve, complete and release with
// their owner checks, TTLs, tenants, NOSCRIPT, pipelining, a killed server, AUTH, SELECT, error
// replies, corrupt values, the cost of a record. Faults a real server cannot show:
// redis_faults_test.cpp; start-up and periodic checks and error logging: redis_checks_test.cpp.
#include "redis_store_fixture.hpp"

#include <algorithm>
#include <idemgate/common/error.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <idemgate/store/record_codec.hpp>

using namespace idemgate;
using namespace idemgate::test;
using namespace std::chrono_literals;
using store::record;
using store::record_state;
using store::reserve_result;
namespace asio = boost::asio;

TEST_CASE("reserve acquires a free key, then reports the in-flight record, then the completed one")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));

    auto first = f.reserve("", "order-1", in_flight_record("owner-a"));
    CHECK_FALSE(first.ec);
    CHECK(first.acquired);
    CHECK_FALSE(first.existing);

    auto again = f.reserve("", "order-1", in_flight_record("owner-b"));
    CHECK_FALSE(again.ec);
    CHECK_FALSE(again.acquired);
    REQUIRE(again.existing);
    CHECK(*again.existing == in_flight_record("owner-a"));

    auto done = completed_record("owner-a", std::string("{\"id\":1}\0\xff", 10));
    CHECK_FALSE(f.complete("", "order-1", done));
    auto replay = f.reserve("", "order-1", in_flight_record("owner-c"));
    CHECK_FALSE(replay.ec);
    CHECK_FALSE(replay.acquired);
    REQUIRE(replay.existing);
    CHECK(*replay.existing == done);
    CHECK(f.stats().latency.count() >= 4);
}

TEST_CASE("complete by another owner is not_owner and does not overwrite the reservation")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(f.reserve("", "k", in_flight_record("owner-a")).acquired);

    CHECK(f.complete("", "k", completed_record("owner-b", "stolen")) == error::not_owner);
    // A token that merely starts with the owner's is another owner.
    CHECK(f.complete("", "k", completed_record("owner-a2", "stolen")) == error::not_owner);
    auto now = f.reserve("", "k", in_flight_record("owner-c"));
    REQUIRE(now.existing);
    CHECK(now.existing->state == record_state::in_flight);
    CHECK(now.existing->owner_token == "owner-a");

    CHECK(f.complete("", "absent", completed_record("owner-a", "x")) == error::not_owner);
    CHECK(resp_integer(redis.command({"EXISTS", key_of("", "absent")})) == 0);
}

TEST_CASE("release by another owner leaves the key; release by the owner frees it")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(f.reserve("", "k", in_flight_record("owner-a")).acquired);

    CHECK(f.release("", "k", "owner-b") == error::not_owner);
    CHECK(resp_integer(redis.command({"EXISTS", key_of("", "k")})) == 1);

    CHECK_FALSE(f.release("", "k", "owner-a"));
    CHECK(resp_integer(redis.command({"EXISTS", key_of("", "k")})) == 0);
    CHECK(f.reserve("", "k", in_flight_record("owner-b")).acquired);
}

TEST_CASE("a reservation expires after lock_ttl and a late complete by its owner is refused")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(f.reserve("", "k", in_flight_record("owner-a"), 200ms).acquired);
    auto pttl = resp_integer(redis.command({"PTTL", key_of("", "k")}));
    CHECK(pttl > 0);
    CHECK(pttl <= 200);

    CHECK(eventually([&] { return resp_integer(redis.command({"EXISTS", key_of("", "k")})) == 0; }, 5s));
    REQUIRE(f.reserve("", "k", in_flight_record("owner-b")).acquired);

    CHECK(f.complete("", "k", completed_record("owner-a", "late")) == error::not_owner);
    auto now = f.reserve("", "k", in_flight_record("owner-c"));
    REQUIRE(now.existing);
    CHECK(now.existing->owner_token == "owner-b");
    CHECK(now.existing->state == record_state::in_flight);
}

TEST_CASE("complete stores the record with record_ttl")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(f.reserve("", "k", in_flight_record("owner-a"), 1000ms).acquired);
    CHECK_FALSE(f.complete("", "k", completed_record("owner-a", "body"), 3600s));
    auto pttl = resp_integer(redis.command({"PTTL", key_of("", "k")}));
    CHECK(pttl > 3590 * 1000);
    CHECK(pttl <= 3600 * 1000);
}

TEST_CASE("keys of two tenants never collide")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    CHECK(f.reserve("a:b", "c", in_flight_record("owner-1")).acquired);
    CHECK(f.reserve("a", "b:c", in_flight_record("owner-2")).acquired);
    CHECK(f.reserve("", "a:b:c", in_flight_record("owner-3")).acquired);
    CHECK(f.reserve("a%3Ab", "c", in_flight_record("owner-4")).acquired);
    auto again = f.reserve("a:b", "c", in_flight_record("owner-5"));
    REQUIRE(again.existing);
    CHECK(again.existing->owner_token == "owner-1");
    CHECK(resp_integer(redis.command({"DBSIZE"})) == 4);
}

TEST_CASE("complete still works after the server lost its scripts (NOSCRIPT reload)")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(f.reserve("", "k1", in_flight_record("owner-a")).acquired);
    CHECK_FALSE(f.complete("", "k1", completed_record("owner-a", "one")));
    CHECK(redis.command({"SCRIPT", "FLUSH"}) == "+OK\r\n");
    REQUIRE(f.reserve("", "k2", in_flight_record("owner-a")).acquired);
    CHECK_FALSE(f.complete("", "k2", completed_record("owner-a", "two")));
    CHECK(redis.command({"SCRIPT", "FLUSH"}) == "+OK\r\n");
    CHECK_FALSE(f.release("", "k1", "owner-a"));
    CHECK(resp_integer(redis.command({"EXISTS", key_of("", "k1")})) == 0);
    // Each NOSCRIPT (the first use of each script, and again after each flush) is a script load,
    // not an error: a healthy store shows no error replies.
    CHECK(f.stats().script_loads.load() >= 3);
    CHECK(f.stats().errors_reply.load() == 0);
}

TEST_CASE("1000 concurrent reserves pipelined on one connection are all answered correctly")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    constexpr int n = 1000;
    std::vector<std::string> keys, tokens;
    std::vector<record> records;
    for (int i = 0; i < n; ++i) {
        keys.push_back("key-" + std::to_string(i));
        tokens.push_back("token-" + std::to_string(i));
        records.push_back(in_flight_record(tokens.back(), fingerprint_of(keys.back())));
    }
    auto spawn_all = [&](const std::vector<record>& recs) {
        std::vector<std::future<reserve_result>> futures;
        for (int i = 0; i < n; ++i)
            futures.push_back(asio::co_spawn(
                f.io.context(),
                [&, i]() -> asio::awaitable<reserve_result> {
                    store::scope s{"", keys[i]};
                    co_return co_await f.session->reserve(s, recs[i], 30s);
                },
                asio::use_future));
        std::vector<reserve_result> results;
        for (auto& fut : futures) {
            REQUIRE(fut.wait_for(10s) == std::future_status::ready);
            results.push_back(fut.get());
        }
        return results;
    };

    auto first = spawn_all(records);
    for (int i = 0; i < n; ++i) {
        CHECK_FALSE(first[i].ec);
        CHECK(first[i].acquired);
    }
    std::vector<record> others;
    for (int i = 0; i < n; ++i)
        others.push_back(in_flight_record("other-" + std::to_string(i)));
    auto second = spawn_all(others);
    int matching = 0;
    for (int i = 0; i < n; ++i)
        if (!second[i].ec && !second[i].acquired && second[i].existing && *second[i].existing == records[i])
            ++matching;
    CHECK(matching == n);
    CHECK(f.stats().connects.load() == 1);
    CHECK(f.stats().commands_sent.load() >= 2 * n);
    CHECK(resp_integer(redis.command({"DBSIZE"})) == n);
}

TEST_CASE("redis killed: commands fail fast with store_unavailable, not ready; restart reconnects")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(f.reserve("", "before", in_flight_record("owner-a")).acquired);

    redis.stop(true);
    CHECK(eventually([&] { return !f.backend->ready(); }, 2s));
    auto started = std::chrono::steady_clock::now();
    auto down = f.reserve("", "during", in_flight_record("owner-a"));
    CHECK(down.ec == error::store_unavailable);
    CHECK(std::chrono::steady_clock::now() - started < 100ms);
    CHECK(f.complete("", "before", completed_record("owner-a", "x")) == error::store_unavailable);

    redis.start();
    CHECK(eventually([&] { return f.backend->ready(); }, 5s));
    auto after = f.reserve("", "after", in_flight_record("owner-a"));
    CHECK_FALSE(after.ec);
    CHECK(after.acquired);
    CHECK(f.stats().connects.load() == 2);
    CHECK(f.stats().errors_unavailable.load() >= 2);
}

TEST_CASE("AUTH with the configured password; a wrong password never becomes ready")
{
    redis_server redis;
    REQUIRE(redis.command({"CONFIG", "SET", "requirepass", "s3cret"}) == "+OK\r\n");
    {
        auto cfg = redis_config_for(redis.port());
        cfg.password = "s3cret";
        store_fixture f(cfg);
        CHECK(f.reserve("", "k", in_flight_record("owner-a")).acquired);
    }
    {
        auto cfg = redis_config_for(redis.port());
        cfg.password = "wrong";
        store_fixture f(cfg, false);
        CHECK(eventually([&] { return f.stats().reconnect_attempts.load() >= 2; }, 5s));
        CHECK_FALSE(f.backend->ready());
        CHECK(f.stats().connects.load() == 0);
        CHECK(f.reserve("", "k2", in_flight_record("owner-a")).ec == error::store_unavailable);
    }
    {
        auto cfg = redis_config_for(redis.port()); // no password at all: PING gets NOAUTH
        store_fixture f(cfg, false);
        CHECK(eventually([&] { return f.stats().reconnect_attempts.load() >= 2; }, 5s));
        CHECK_FALSE(f.backend->ready());
        CHECK(f.stats().connects.load() == 0);
    }
}

TEST_CASE("SELECT puts the keys in the configured database")
{
    redis_server redis;
    auto cfg = redis_config_for(redis.port());
    cfg.db = 5;
    store_fixture f(cfg);
    REQUIRE(f.reserve("", "k", in_flight_record("owner-a")).acquired);
    auto keyspace = redis.command({"INFO", "keyspace"});
    CHECK(keyspace.find("db5:keys=1") != std::string::npos);
    CHECK(keyspace.find("db0:") == std::string::npos);
}

TEST_CASE("error replies (WRONGTYPE, OOM) are store_error_reply and the connection stays usable")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(resp_integer(redis.command({"HSET", key_of("", "hash"), "f", "v"})) == 1);
    CHECK(f.reserve("", "hash", in_flight_record("owner-a")).ec == error::store_error_reply);

    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "1"}) == "+OK\r\n");
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == "+OK\r\n");
    CHECK(f.reserve("", "oom", in_flight_record("owner-a")).ec == error::store_error_reply);
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "0"}) == "+OK\r\n");

    CHECK(f.reserve("", "fine", in_flight_record("owner-a")).acquired);
    CHECK(f.stats().errors_reply.load() >= 2);
    CHECK(f.stats().connects.load() == 1);
}

TEST_CASE("a stored value that does not decode is record_corrupt, never served")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    REQUIRE(redis.command({"SET", key_of("", "bad"), "not a record"}) == "+OK\r\n");
    auto r = f.reserve("", "bad", in_flight_record("owner-a"));
    CHECK(r.ec == error::record_corrupt);
    CHECK_FALSE(r.acquired);
    CHECK_FALSE(r.existing);
    CHECK(f.stats().errors_corrupt.load() == 1);
}

TEST_CASE("make_backend picks the memory or the redis store")
{
    config::store_config cfg;
    cfg.choose(config::store_type::memory);
    CHECK(store::make_backend(cfg)->kind() == "memory");
    cfg.backend = redis_config_for(free_port()); // store.type: redis, with its section
    auto backend = store::make_backend(cfg);
    CHECK(backend->kind() == "redis");
    CHECK_FALSE(backend->ready()); // no session, no connection
}

TEST_CASE("a command issued while the first connection is being made waits for it instead of failing")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()), false);
    auto r = f.reserve("", "early", in_flight_record("owner-a")); // no wait for ready()
    CHECK_FALSE(r.ec);
    CHECK(r.acquired);
    CHECK(f.backend->ready());
}

TEST_CASE("a stored record costs Redis at most its response size plus 200 bytes")
{
    // "Redis memory per stored record <= response size + 200 bytes", measured by
    // bench/run.sh with INFO memory over many records against the bench upstream's answer
    // (nginx `return 201` with a small JSON body; response size = the bytes curl -i shows).
    // Same here, with the headers the gateway keeps and UUID-sized keys.
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    constexpr int n = 20000;
    auto used_memory = [&] {
        auto info = redis.command({"INFO", "memory"});
        auto pos = info.find("used_memory:");
        REQUIRE(pos != std::string::npos);
        return std::stoll(info.substr(pos + 12));
    };
    store::stored_response response;
    response.status = 201;
    response.reason = "Created";
    response.headers = {{"Server", "nginx/1.22.1"},
                        {"Date", "Sun, 29 Nov 2026 12:00:00 GMT"},
                        {"Content-Type", "application/json"},
                        {"Content-Length", "33"}};
    response.body = R"({"id":"ord_1","status":"created"})";
    std::string on_the_wire = "HTTP/1.1 201 Created\r\n";
    for (const auto& h : response.headers)
        on_the_wire += h.name + ": " + h.value + "\r\n";
    on_the_wire += "Connection: keep-alive\r\n\r\n" + response.body;
    const std::size_t response_size = on_the_wire.size();

    auto before = used_memory();
    std::vector<std::string> keys;
    for (int i = 0; i < n; ++i) {
        char uuid[40];
        std::snprintf(uuid, sizeof uuid, "%08x-1111-4222-8333-%012x", i * 2654435761u, i);
        keys.push_back(uuid);
    }
    constexpr int batch = 500;
    for (int start = 0; start < n; start += batch) {
        std::vector<std::future<boost::system::error_code>> futures;
        for (int i = start; i < start + batch; ++i)
            futures.push_back(asio::co_spawn(
                f.io.context(),
                [&, i]() -> asio::awaitable<boost::system::error_code> {
                    store::scope s{"", keys[i]};
                    auto token = "0123456789abcdef0123456789ab" + std::to_string(10000 + i).substr(1);
                    auto rec = in_flight_record(token, fingerprint_of(keys[i]));
                    auto r = co_await f.session->reserve(s, rec, 30s);
                    if (r.ec || !r.acquired)
                        co_return r.ec ? r.ec : make_error_code(error::not_owner);
                    rec.state = record_state::completed;
                    rec.response = response;
                    co_return co_await f.session->complete(s, rec, 3600s);
                },
                asio::use_future));
        int ok = 0;
        for (auto& fut : futures) {
            REQUIRE(fut.wait_for(10s) == std::future_status::ready);
            ok += !fut.get();
        }
        REQUIRE(ok == batch);
    }
    auto per_record = static_cast<double>(used_memory() - before) / n;
    MESSAGE("redis bytes per record: " << per_record << ", response size: " << response_size
                                       << ", overhead: " << per_record - static_cast<double>(response_size));
    CHECK(per_record <= static_cast<double>(response_size) + 200);
}
