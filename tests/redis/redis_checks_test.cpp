// SPDX-License-Identifier: Apache-2.0
// What the Redis store checks and reports about its server: the eviction policy at start-up,
// on every reconnect and periodically; the Redis version; error replies in the log.
#include "redis_store_fixture.hpp"

#include <algorithm>
#include <idemgate/common/error.hpp>

using namespace idemgate;
using namespace idemgate::test;

TEST_CASE("an evicting maxmemory-policy is reported as an error at start-up")
{
    redis_server redis({"--maxmemory-policy", "volatile-lru"});
    std::string logged;
    {
        stdout_capture capture;
        store_fixture f(redis_config_for(redis.port()));
        eventually(
            [&] { return capture.text().find("maxmemory-policy is not noeviction") != std::string::npos; },
            5s);
        logged = capture.text();
        CHECK(f.stats().eviction_safe.load() == 0);
    }
    CHECK(logged.find("\"level\":\"error\",\"msg\":\"REDIS MAY EVICT") != std::string::npos);
    CHECK(logged.find("\"maxmemory_policy\":\"volatile-lru\"") != std::string::npos);
    CHECK(logged.find("redis 7.0 or newer is required") == std::string::npos); // this is 7.x
}

TEST_CASE("a Redis older than 7.0 is reported at start-up")
{
    fake_redis fake([&](const std::vector<std::string>& cmd, int) -> std::string {
        if (cmd[0] == "PING")
            return "+PONG\r\n";
        if (cmd[0] == "INFO")
            return resp_bulk("# Server\r\nredis_version:6.2.14\r\nredis_mode:standalone\r\n");
        if (cmd[0] == "CONFIG")
            return resp_noeviction;
        return "-ERR unknown command\r\n";
    });
    std::string logged;
    {
        stdout_capture capture;
        store_fixture f(redis_config_for(fake.port()));
        eventually([&] { return capture.text().find("redis 7.0 or newer is required") != std::string::npos; },
                   5s);
        logged = capture.text();
    }
    CHECK(logged.find("redis 7.0 or newer is required") != std::string::npos);
    CHECK(logged.find("\"redis_version\":\"6.2.14\"") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The eviction policy is read on every (re)connect and periodically.

namespace {

// Lines of `text` that contain `needle`.
int lines_with(const std::string& text, const std::string& needle)
{
    int n = 0;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        if (text.substr(start, end - start).find(needle) != std::string::npos)
            ++n;
        start = end + 1;
    }
    return n;
}

// How many CONFIG GET commands the server has run (INFO commandstats).
long long config_get_calls(redis_server& redis)
{
    auto stats = redis.command({"INFO", "commandstats"});
    auto pos = stats.find("cmdstat_config|get:calls=");
    return pos == std::string::npos ? 0 : std::stoll(stats.substr(pos + 25));
}

constexpr const char* evict_warning = "REDIS MAY EVICT IDEMPOTENCY RECORDS";

} // namespace

TEST_CASE("a policy switched to allkeys-lru after start-up is reported within the check interval")
{
    redis_server redis;
    stdout_capture capture;
    store::redis_options options;
    options.eviction_check_interval = 200ms;
    store_fixture f(redis_config_for(redis.port()), true, options);
    REQUIRE(eventually([&] { return f.stats().eviction_safe.load() == 1; }, 5s));
    CHECK(lines_with(capture.text(), evict_warning) == 0);

    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}) == "+OK\r\n");
    auto switched = std::chrono::steady_clock::now();
    REQUIRE(eventually([&] { return f.stats().eviction_safe.load() == 0; }, 5s));
    // One interval, plus slack for a shared machine.
    CHECK(std::chrono::steady_clock::now() - switched < 1500ms);
    CHECK(eventually([&] { return lines_with(capture.text(), evict_warning) == 1; }, 2s));
    CHECK(lines_with(capture.text(), "\"maxmemory_policy\":\"allkeys-lru\"") == 1);

    // Later checks that find the same policy do not repeat the error.
    auto calls = config_get_calls(redis);
    REQUIRE(eventually([&] { return config_get_calls(redis) >= calls + 2; }, 5s));
    CHECK(lines_with(capture.text(), evict_warning) == 1);
    // The request path is unaffected.
    CHECK(f.reserve("", "k", in_flight_record("owner-a")).acquired);

    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == "+OK\r\n");
    REQUIRE(eventually([&] { return f.stats().eviction_safe.load() == 1; }, 5s));
    CHECK(eventually([&] { return lines_with(capture.text(), "maxmemory-policy is noeviction again") == 1; },
                     2s));
    CHECK(lines_with(capture.text(), "\"previous_policy\":\"allkeys-lru\"") == 1);
    CHECK(f.stats().connects.load() == 1); // no reconnect was needed to notice
}

TEST_CASE("a reconnect re-reads the policy: a Redis restarted with allkeys-lru is reported")
{
    // Started with allkeys-lru on its command line, switched to noeviction before the store
    // connects: a restart brings allkeys-lru back. The periodic check is out of the picture.
    redis_server redis({"--maxmemory-policy", "allkeys-lru"});
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == "+OK\r\n");
    stdout_capture capture;
    store::redis_options options;
    options.eviction_check_interval = 1h;
    store_fixture f(redis_config_for(redis.port()), true, options);
    REQUIRE(eventually([&] { return f.stats().eviction_safe.load() == 1; }, 5s));

    redis.stop(true);
    redis.start();
    REQUIRE(eventually([&] { return f.stats().connects.load() == 2; }, 5s));
    CHECK(eventually([&] { return f.stats().eviction_safe.load() == 0; }, 5s));
    CHECK(eventually([&] { return lines_with(capture.text(), evict_warning) == 1; }, 2s));
}

TEST_CASE("CONFIG refused (renamed on managed Redis): eviction_safe is -1, warned once")
{
    fake_redis fake([&](const std::vector<std::string>& cmd, int) -> std::string {
        if (cmd[0] == "PING")
            return "+PONG\r\n";
        if (cmd[0] == "CONFIG")
            return "-ERR unknown command 'CONFIG', with args beginning with: 'GET'\r\n";
        return "-ERR unknown command\r\n";
    });
    stdout_capture capture;
    store::redis_options options;
    options.eviction_check_interval = 50ms;
    store_fixture f(redis_config_for(fake.port()), true, options);
    auto config_commands = [&] {
        int n = 0;
        for (const auto& cmd : fake.commands())
            n += cmd[0] == "CONFIG";
        return n;
    };
    REQUIRE(eventually([&] { return config_commands() >= 3; }, 5s));
    CHECK(f.stats().eviction_safe.load() == -1);
    CHECK(f.backend->ready()); // tolerated, as before
    CHECK(lines_with(capture.text(), "could not read redis maxmemory-policy") == 1);
    CHECK(lines_with(capture.text(), "unknown command 'CONFIG'") == 1);
}

// ---------------------------------------------------------------------------------------------
// Error replies reach the log with their text.

TEST_CASE("an OOM error reply is logged with its text, the operation and the command")
{
    redis_server redis;
    stdout_capture capture;
    store::redis_options options;
    options.error_log_interval = 1h; // the first error only
    store_fixture f(redis_config_for(redis.port()), true, options);
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "1"}) == "+OK\r\n");
    for (int i = 0; i < 5; ++i)
        CHECK(f.reserve("", "oom-" + std::to_string(i), in_flight_record("owner-a")).ec ==
              error::store_error_reply);
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "0"}) == "+OK\r\n");

    auto text = capture.text();
    CHECK(lines_with(text, "redis answered with an error") == 1); // rate-limited
    CHECK(lines_with(text, "\"reply\":\"OOM command not allowed") == 1);
    CHECK(lines_with(text, "\"operation\":\"reserve\",\"command\":\"SET\"") == 1);
    CHECK(f.stats().errors_reply.load() == 5);
}

TEST_CASE("error replies are logged at most once per interval, with a count of those not logged")
{
    redis_server redis;
    stdout_capture capture;
    store::redis_options options;
    options.error_log_interval = 300ms;
    store_fixture f(redis_config_for(redis.port()), true, options);
    REQUIRE(f.reserve("", "k1", in_flight_record("owner-a")).acquired);
    REQUIRE_FALSE(f.complete("", "k1", completed_record("owner-a", "x"))); // loads the script
    REQUIRE(f.reserve("", "k2", in_flight_record("owner-a")).acquired);
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "1"}) == "+OK\r\n");
    // complete is EVALSHA of a writing script: refused with OOM too.
    CHECK(f.complete("", "k2", completed_record("owner-a", "x")) == error::store_error_reply);
    for (int i = 0; i < 10; ++i)
        CHECK(f.reserve("", "oom-" + std::to_string(i), in_flight_record("owner-a")).ec ==
              error::store_error_reply);
    CHECK(eventually(
        [&] {
            f.reserve("", "more", in_flight_record("owner-a")); // an error reply each time
            return lines_with(capture.text(), "redis answered with an error") >= 2;
        },
        5s));
    REQUIRE(redis.command({"CONFIG", "SET", "maxmemory", "0"}) == "+OK\r\n");

    auto text = capture.text();
    CHECK(lines_with(text, "\"operation\":\"complete\",\"command\":\"EVALSHA\"") == 1);
    CHECK(lines_with(text, "\"error_replies_not_logged\":") == 1);
    CHECK(lines_with(text, "redis answered with an error") == 2); // of 12 or more error replies
}

TEST_CASE("a long or binary error reply is logged bounded and as printable ASCII")
{
    std::string noise(500, 'y');
    fake_redis fake([&](const std::vector<std::string>& cmd, int) -> std::string {
        if (cmd[0] == "PING")
            return "+PONG\r\n";
        if (cmd[0] == "CONFIG")
            return resp_noeviction;
        if (cmd[0] == "SET")
            return "-NOPERM \x01\xff\xc3 user has no permissions " + noise + "\r\n";
        return "-ERR unknown command\r\n";
    });
    stdout_capture capture;
    store_fixture f(redis_config_for(fake.port()));
    wait_for_start_up_checks(fake);
    CHECK(f.reserve("", "k", in_flight_record("owner-a")).ec == error::store_error_reply);

    auto text = capture.text();
    auto pos = text.find("\"reply\":\"NOPERM ??? user has no permissions yyy");
    REQUIRE(pos != std::string::npos);
    auto reply = text.substr(pos + 9, text.find('"', pos + 9) - pos - 9);
    CHECK(reply.size() == 203); // 200 bytes and "..."
    CHECK(reply.ends_with("yyy..."));
    auto not_printable = std::find_if(text.begin(), text.end(),
                                      [](unsigned char c) { return c != '\n' && (c < 0x20 || c >= 0x7f); });
    CHECK_MESSAGE(not_printable == text.end(), "byte " << int(static_cast<unsigned char>(*not_printable)));
}
