// SPDX-License-Identifier: Apache-2.0
// The Redis store against a fake server, for the faults a real one cannot be made to show: a
// reply after the command timeout, garbage, a reply of the wrong type, a server that stops
// answering, a connection dropped during the handshake.
#include "redis_store_fixture.hpp"

#include <algorithm>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>

using namespace idemgate;
using namespace idemgate::test;

TEST_CASE(
    "a reply after the command timeout is store_timeout and is discarded, not given to the next command")
{
    std::atomic<int> sets{0};
    std::atomic<bool> late_reply_sent{false};
    fake_redis fake([&](const std::vector<std::string>& cmd, int) -> std::string {
        if (cmd[0] == "PING")
            return "+PONG\r\n";
        if (cmd[0] == "CONFIG")
            return resp_noeviction;
        if (cmd[0] == "SET") {
            if (sets++ == 0) {
                std::this_thread::sleep_for(1000ms); // the fault: a slow server
                late_reply_sent = true;
                return resp_bulk(store::encode_record(completed_record("someone-else", "late")));
            }
            return resp_nil;
        }
        return "-ERR unknown command\r\n";
    });
    auto cfg = redis_config_for(fake.port());
    cfg.command_timeout = 300ms;  // generous: the machine is shared, PING must not time out
    cfg.connect_timeout = 2000ms; // keeps the stalled-server detector (>= 2 s) out of this test
    store_fixture f(cfg);
    wait_for_start_up_checks(fake);

    auto started = std::chrono::steady_clock::now();
    auto slow = f.reserve("", "k1", in_flight_record("owner-a"));
    CHECK(slow.ec == error::store_timeout);
    CHECK(std::chrono::steady_clock::now() - started < 900ms);

    REQUIRE(eventually([&] { return late_reply_sent.load(); }, 5s));
    auto next = f.reserve("", "k2", in_flight_record("owner-a"));
    CHECK_FALSE(next.ec);
    CHECK(next.acquired);
    CHECK_FALSE(next.existing);
    CHECK(f.stats().errors_timeout.load() == 1);
    CHECK(f.stats().connects.load() == 1);
    CHECK(fake.connections() == 1);
}

TEST_CASE("a garbage reply is store_protocol, resets the connection, and the store recovers")
{
    fake_redis fake([&](const std::vector<std::string>& cmd, int connection) -> std::string {
        if (cmd[0] == "PING")
            return "+PONG\r\n";
        if (cmd[0] == "CONFIG")
            return resp_noeviction;
        if (cmd[0] == "SET")
            return connection == 0 ? std::string("&&& this is not RESP\r\n") : resp_nil;
        return "-ERR unknown command\r\n";
    });
    store_fixture f(redis_config_for(fake.port()));
    wait_for_start_up_checks(fake);

    auto bad = f.reserve("", "k", in_flight_record("owner-a"));
    CHECK(bad.ec == error::store_protocol);
    CHECK(eventually([&] { return f.stats().connects.load() == 2 && f.backend->ready(); }, 5s));
    auto good = f.reserve("", "k", in_flight_record("owner-a"));
    CHECK_FALSE(good.ec);
    CHECK(good.acquired);
    CHECK(f.stats().errors_protocol.load() >= 1);
}

TEST_CASE("a well-formed reply of the wrong type is store_protocol without a reconnect")
{
    fake_redis fake([&](const std::vector<std::string>& cmd, int) -> std::string {
        if (cmd[0] == "PING")
            return "+PONG\r\n";
        if (cmd[0] == "CONFIG")
            return "-ERR unknown command 'CONFIG'\r\n"; // CONFIG disabled: tolerated
        if (cmd[0] == "SET")
            return ":5\r\n";
        if (cmd[0] == "EVALSHA")
            return "+OK\r\n";
        return "-ERR unknown command\r\n";
    });
    store_fixture f(redis_config_for(fake.port()));
    wait_for_start_up_checks(fake);
    CHECK(f.reserve("", "k", in_flight_record("owner-a")).ec == error::store_protocol);
    CHECK(f.complete("", "k", completed_record("owner-a", "x")) == error::store_protocol);
    CHECK(f.reserve("", "k", in_flight_record("owner-a")).ec == error::store_protocol);
    CHECK(f.stats().connects.load() == 1);
}

TEST_CASE("a server that stops answering is abandoned and reconnected")
{
    std::atomic<bool> hung{false};
    fake_redis fake([&](const std::vector<std::string>& cmd, int connection) -> std::string {
        if (connection == 0 && (hung || cmd[0] == "SET")) {
            hung = true; // the first connection hangs at its first SET: nothing after is answered
            return {};
        }
        return healthy_answer(cmd);
    });
    auto cfg = redis_config_for(fake.port());
    cfg.command_timeout = 50ms;
    cfg.connect_timeout = 200ms;
    store_fixture f(cfg);
    wait_for_start_up_checks(fake);

    CHECK(f.reserve("", "k", in_flight_record("owner-a")).ec == error::store_timeout);
    // Each timed-out command checks how long the oldest one has waited; past
    // max(connect_timeout, 4 x command_timeout) the connection is dropped and redialled.
    bool reconnected = eventually(
        [&] {
            auto r = f.reserve("", "k", in_flight_record("owner-a"));
            return !r.ec && r.acquired;
        },
        5s);
    CHECK(reconnected);
    CHECK(fake.connections() >= 2);
    CHECK(f.stats().connects.load() >= 2);
}

TEST_CASE("a connection the server drops during the handshake fails at once and is redialled")
{
    fake_redis fake([&](const std::vector<std::string>& cmd, int connection) -> std::string {
        if (connection == 0 && cmd[0] == "PING")
            return resp_close; // the fault: the first connection is dropped before PING's answer
        return healthy_answer(cmd);
    });
    auto cfg = redis_config_for(fake.port());
    // A PING left to its deadline would hold the first connect attempt this long.
    cfg.command_timeout = 20s;
    cfg.connect_timeout = 20s;
    auto started = std::chrono::steady_clock::now();
    store_fixture f(cfg, false);
    REQUIRE(eventually([&] { return f.backend->ready(); }, 15s));
    CHECK(std::chrono::steady_clock::now() - started < 10s);
    CHECK(fake.connections() == 2);
    CHECK(f.stats().connects.load() == 1);
    auto r = f.reserve("", "k", in_flight_record("owner-a"));
    CHECK_FALSE(r.ec);
    CHECK(r.acquired);
}
