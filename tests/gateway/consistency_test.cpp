// SPDX-License-Identifier: Apache-2.0
// store.redis.consistency strict: a reservation reaches min_replicas_ack replicas before the
// upstream runs, or it is released and the request refused with 503 (the retry is then safe).
// Real primary and replica; the replica is put to sleep (DEBUG SLEEP) or detached. The suite
// needs IDEMGATE_TEST_STORE=redis (ctest entry gateway.consistency.redis); elsewhere it is skipped.
#include "gateway_fixture.hpp"

#include <chrono>
#include <cstdlib>
#include <doctest/doctest.h>
#include <idemgate/store/record_codec.hpp>
#include <thread>

using namespace idemgate::test;

namespace {

using clock_type = std::chrono::steady_clock;

template<class Pred>
bool eventually(Pred pred, milliseconds timeout = 10s)
{
    auto deadline = clock_type::now() + timeout;
    while (!pred()) {
        if (clock_type::now() > deadline)
            return false;
        std::this_thread::sleep_for(20ms); // polling the servers' own state
    }
    return true;
}

// Whether `redis` answers a PING within 100 ms (it does not while a DEBUG SLEEP runs).
bool answers_ping(std::uint16_t port)
{
    try {
        return redis_command(port, {"PING"}, 100ms) == "+PONG\r\n";
    } catch (const std::exception&) {
        return false;
    }
}

// Whether a client of `primary` is blocked in a WAIT (CLIENT LIST: flags=b, cmd=wait).
bool blocked_in_wait(redis_server& primary)
{
    auto clients = primary.command({"CLIENT", "LIST"});
    std::size_t at = 0;
    while (at < clients.size()) {
        auto end = clients.find('\n', at);
        auto line = clients.substr(at, end == std::string::npos ? std::string::npos : end - at);
        auto flags = line.find(" flags=");
        if (flags != std::string::npos && line.find(" cmd=wait ") != std::string::npos &&
            line.substr(flags + 7, line.find(' ', flags + 7) - flags - 7).find('b') != std::string::npos)
            return true;
        if (end == std::string::npos)
            break;
        at = end + 1;
    }
    return false;
}

// How many WAIT commands `primary` has run (INFO commandstats).
long long wait_calls(redis_server& primary)
{
    auto stats = primary.command({"INFO", "commandstats"});
    auto at = stats.find("cmdstat_wait:calls=");
    return at == std::string::npos ? 0 : std::stoll(stats.substr(at + 19));
}

// How many EVALSHA commands `primary` has run (INFO commandstats).
long long evalsha_calls(redis_server& primary)
{
    auto stats = primary.command({"INFO", "commandstats"});
    auto at = stats.find("cmdstat_evalsha:calls=");
    return at == std::string::npos ? 0 : std::stoll(stats.substr(at + 22));
}

bool replicating(redis_server& replica)
{
    return eventually([&] {
        return replica.command({"INFO", "replication"}).find("master_link_status:up") != std::string::npos;
    });
}

// Ready, and counting the replica: strict mode refuses at once while the primary's ROLE (read
// every second) lists fewer replicas than min_replicas_ack, and the primary may list a replica
// only some time after the replica reports its link up.
bool store_ready(gateway_process& gateway)
{
    return eventually([&] {
        try {
            return http_request(gateway.admin_port(), "GET", "/readyz", {}, {}, 1s).status == 200 &&
                   metric(gateway.admin_port(), "idemgate_redis_connected_replicas") == 1;
        } catch (const std::exception&) {
            return false;
        }
    });
}

} // namespace

TEST_SUITE_BEGIN("consistency" * needs_store("redis"));

TEST_CASE("consistency strict: an unreplicated reservation is released and refused before the upstream runs")
{
    redis_server primary;
    redis_server replica(
        {"--replicaof", "127.0.0.1", std::to_string(primary.port()), "--enable-debug-command", "yes"});
    REQUIRE(replicating(replica));
    test_upstream_process upstream;
    store_under_test store;
    // pass_through: strict refuses even where a store failure would let the request through.
    // A long wait_timeout makes the WAIT visible next to a replay.
    store.yaml =
        "store:\n  type: redis\n  on_failure: pass_through\n  redis:\n    address: \"" + primary.address() +
        "\"\n    key_prefix: idemgate-strict-test\n    min_replicas_ack: 1\n    consistency: strict\n"
        "    wait_timeout: 1500ms\n    command_timeout: 3s\n";
    gateway_process gateway(gateway_yaml(store, upstream.port(), free_port(), gateway_options{}));
    REQUIRE(store_ready(gateway));
    auto post = [&](const std::string& key) {
        return gateway_request(gateway.port(), "POST", "/api/orders",
                               {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
    };
    auto ms = [](auto d) { return std::chrono::duration_cast<milliseconds>(d).count(); };

    const auto done = unique_key("strict-done");
    REQUIRE(post(done).status == 201);
    CHECK(upstream.executions() == 1);
    CHECK(metric(gateway.admin_port(), "idemgate_reservations_unreplicated_total") == 0);

    // The replica stops answering: the WAIT runs out, the key is released, nothing ran.
    std::thread sleeper([&] {
        try {
            redis_command(replica.port(), {"DEBUG", "SLEEP", "3"}, 10s);
        } catch (const std::exception&) {
        }
    });
    const bool asleep = eventually([&] { return !answers_ping(replica.port()); }, 5s);
    CHECK_MESSAGE(asleep, "the replica kept answering PING after DEBUG SLEEP");
    const auto refused_key = unique_key("strict-refused");
    http_response refused;
    auto started = clock_type::now();
    std::thread first([&] { refused = post(refused_key); });
    // The reservation's WAIT is out once the primary shows it blocked.
    CHECK(eventually([&] { return blocked_in_wait(primary); }, 5s));
    // A replay meanwhile does not queue behind that WAIT: it is answered while the WAIT is
    // still blocked (an event, rather than a time that a loaded machine can stretch).
    auto replay_started = clock_type::now();
    auto replay = post(done);
    auto replay_took = clock_type::now() - replay_started;
    const bool wait_still_out = blocked_in_wait(primary);
    first.join();
    auto refused_took = clock_type::now() - started;
    MESSAGE("replay while a WAIT was out: " << ms(replay_took) << " ms; refusal after " << ms(refused_took)
                                            << " ms");
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(wait_still_out);
    CHECK(refused.status == 503);
    CHECK(refused.header("content-type") == "application/problem+json");
    CHECK(refused.body.find("store-unavailable") != std::string::npos);
    CHECK(!refused.header("retry-after").empty());
    CHECK(refused_took >= 1400ms);
    CHECK(upstream.executions() == 1);
    CHECK(primary.command({"KEYS", "idemgate-strict-test:*" + refused_key}) == "*0\r\n");
    CHECK(metric(gateway.admin_port(), "idemgate_reservations_unreplicated_total") == 1);
    sleeper.join();

    // Its retry runs once the replica answers again.
    REQUIRE(eventually([&] { return post(refused_key).status == 201; }));
    CHECK(upstream.executions() == 2);

    // No replica connected at all: refused at once, without waiting out a WAIT.
    REQUIRE(replica.command({"REPLICAOF", "NO", "ONE"}) == "+OK\r\n");
    REQUIRE(
        eventually([&] { return metric(gateway.admin_port(), "idemgate_redis_connected_replicas") == 0; }));
    const auto waits_before = wait_calls(primary);
    started = clock_type::now();
    auto alone = post(unique_key("strict-alone"));
    auto alone_took = clock_type::now() - started;
    MESSAGE("refusal without a connected replica after " << ms(alone_took) << " ms");
    CHECK(alone.status == 503);
    CHECK(wait_calls(primary) == waits_before); // no WAIT was sent and waited out
    CHECK(upstream.executions() == 2);
}

TEST_CASE(
    "consistency strict: a completed record the replicas did not acknowledge is written again until they do")
{
    redis_server primary;
    redis_server replica(
        {"--replicaof", "127.0.0.1", std::to_string(primary.port()), "--enable-debug-command", "yes"});
    REQUIRE(replicating(replica));
    test_upstream_process upstream;
    store_under_test store;
    store.yaml =
        "store:\n  type: redis\n  redis:\n    address: \"" + primary.address() +
        "\"\n    key_prefix: idemgate-resend-test\n    min_replicas_ack: 1\n    consistency: strict\n"
        "    wait_timeout: 300ms\n    command_timeout: 3s\n";
    gateway_process gateway(gateway_yaml(store, upstream.port(), free_port(), gateway_options{}));
    REQUIRE(store_ready(gateway));
    const auto admin = gateway.admin_port();
    const auto key = unique_key("strict-resend");
    auto post = [&](std::vector<std::pair<std::string, std::string>> headers) {
        headers.emplace_back("Idempotency-Key", key);
        headers.emplace_back("Content-Type", "application/json");
        return gateway_request(gateway.port(), "POST", "/api/orders", headers, "{}");
    };

    // The reservation is acknowledged while the replica is awake; the replica then sleeps while
    // the upstream works, so the completed record's WAIT runs out. On a loaded machine the awake
    // replica can still miss the 300 ms: the reservation is then refused with 503 and nothing runs
    // (the case above), and the client retries as Retry-After tells it to, a few times at most.
    http_response first;
    std::thread client([&] {
        for (int attempt = 0; attempt < 5; ++attempt) {
            first = post({{"X-Test-Delay-Ms", "800"}});
            if (first.status != 503 || upstream.executions() != 0)
                break;
        }
    });
    if (!eventually([&] { return upstream.executions() == 1; }, 10s)) {
        client.join();
        FAIL("the first request never reached the upstream; it was answered "
             << first.status << " " << first.body << "\ngateway output:\n"
             << gateway.process().output());
    }
    std::thread sleeper([&] {
        try {
            redis_command(replica.port(), {"DEBUG", "SLEEP", "3"}, 10s);
        } catch (const std::exception&) {
        }
    });
    client.join();
    // The client has its answer, and the record waits to be written again.
    CHECK(first.status == 201);
    CHECK(first.header("idempotency-status") == "executed");
    CHECK(metric(admin, "idemgate_completes_pending") == 1);
    CHECK(metric(admin, "idemgate_records_unreplicated_total") == 1);
    CHECK(metric(admin, "idemgate_records_lost_total") == 0);

    // What a failover that lost the record would leave: the key gone from the primary. The
    // next attempt writes it again.
    const std::string stored_key = "idemgate-resend-test:*" + key;
    auto keys = primary.command({"KEYS", stored_key});
    REQUIRE(keys.find(key) != std::string::npos);
    auto name = keys.substr(keys.find("idemgate-resend-test:"));
    name = name.substr(0, name.find("\r\n"));
    REQUIRE(primary.command({"DEL", name}) == ":1\r\n");

    sleeper.join();
    REQUIRE(eventually(
        [&] { return metric(admin, "idemgate_completes_resent_total{result=\"acked\"}") == 1; }, 10s));
    CHECK(metric(admin, "idemgate_completes_pending") == 0);
    CHECK(metric(admin, "idemgate_completes_resent_total{result=\"dropped\"}") == 0);
    CHECK(primary.command({"EXISTS", name}) == ":1\r\n");
    CHECK(replica.command({"EXISTS", name}) == ":1\r\n");

    // The retry gets the first answer; the upstream ran once.
    auto retry = post({});
    CHECK(retry.status == 201);
    CHECK(retry.header("idempotent-replayed") == "true");
    CHECK(retry.body == first.body);
    CHECK(upstream.executions() == 1);

    // Another request's value at the key, after a failover that lost this one's: its lock is
    // waited out (it may be a retry that is refused and releases), its record ends the attempt.
    // `replica_sleep` seconds of replica sleep make each record wait.
    auto pending_record_of = [&](const std::string& k, int replica_sleep) {
        // Counted before the request starts: it may reach the upstream at once.
        const auto before = upstream.executions();
        std::thread c([&] {
            gateway_request(gateway.port(), "POST", "/api/orders",
                            {{"Idempotency-Key", k}, {"X-Test-Delay-Ms", "800"}}, "{}");
        });
        if (!eventually([&] { return upstream.executions() == before + 1; }, 5s)) {
            c.join();
            FAIL("the request never reached the upstream");
        }
        std::thread s([&, replica_sleep] {
            try {
                redis_command(replica.port(), {"DEBUG", "SLEEP", std::to_string(replica_sleep)}, 10s);
            } catch (const std::exception&) {
            }
        });
        c.join();
        REQUIRE(metric(admin, "idemgate_completes_pending") == 1);
        auto found = primary.command({"KEYS", "idemgate-resend-test:*" + k});
        REQUIRE(found.find(k) != std::string::npos);
        auto at = found.substr(found.find("idemgate-resend-test:"));
        return std::make_pair(at.substr(0, at.find("\r\n")), std::move(s));
    };
    idemgate::store::record foreign;
    foreign.owner_token = "another-request";
    foreign.fingerprint = std::string(64, 'a');
    foreign.created_unix_ms = 1;

    auto [locked, sleeper2] = pending_record_of(unique_key("strict-resend-locked"), 2);
    foreign.state = idemgate::store::record_state::in_flight;
    REQUIRE(primary.command({"SET", locked, idemgate::store::encode_record(foreign)}) == "+OK\r\n");
    const auto resends_before = evalsha_calls(primary);
    // Several resend rounds (the resend script, every 100 ms) meet the lock: counted on the primary.
    CHECK(eventually([&] { return evalsha_calls(primary) >= resends_before + 4; }, 5s));
    CHECK(metric(admin, "idemgate_completes_pending") == 1);
    CHECK(metric(admin, "idemgate_completes_resent_total{result=\"dropped\"}") == 0);
    REQUIRE(primary.command({"DEL", locked}) == ":1\r\n"); // that request released it
    sleeper2.join();
    REQUIRE(eventually(
        [&] { return metric(admin, "idemgate_completes_resent_total{result=\"acked\"}") == 2; }, 10s));
    CHECK(primary.command({"GET", locked}).find("another-request") == std::string::npos);

    auto [settled, sleeper3] = pending_record_of(unique_key("strict-resend-settled"), 2);
    foreign.state = idemgate::store::record_state::completed;
    foreign.response.status = 200;
    auto other_record = idemgate::store::encode_record(foreign);
    REQUIRE(primary.command({"SET", settled, other_record}) == "+OK\r\n");
    sleeper3.join();
    REQUIRE(eventually(
        [&] { return metric(admin, "idemgate_completes_resent_total{result=\"dropped\"}") == 1; }, 10s));
    CHECK(primary.command({"GET", settled}).find("another-request") != std::string::npos);
    CHECK(metric(admin, "idemgate_completes_pending") == 0);
}

TEST_SUITE_END();
