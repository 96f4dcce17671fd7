// SPDX-License-Identifier: Apache-2.0
// Process lifecycle: client disconnects mid-request, SIGTERM drain, command line and config errors.
#include "gateway_fixture.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <doctest/doctest.h>
#include <filesystem>
#include <signal.h>
#include <thread>

using namespace idemgate::test;

namespace {

// Runs `idemgate args...` to completion and returns its exit status and output.
struct run_result {
    std::optional<int> status;
    std::string output;
};

std::vector<std::string> split_lines(const std::string& text)
{
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

run_result run_idemgate(std::vector<std::string> args)
{
    child_process proc(gateway_bin(), std::move(args));
    run_result result;
    result.status = proc.wait_exit(10s);
    for (auto& line : proc.lines())
        result.output += line + "\n";
    return result;
}

std::string valid_yaml(std::uint16_t upstream_port)
{
    std::string y;
    y += "listen: \"127.0.0.1:0\"\n";
    y += "admin_listen: \"127.0.0.1:0\"\n";
    y += "store:\n";
    y += "  type: memory\n";
    y += "upstreams:\n";
    y += "  orders: { address: \"127.0.0.1:" + std::to_string(upstream_port) + "\" }\n";
    y += "routes:\n";
    y += "  - path_prefix: \"/api/\"\n";
    y += "    upstream: orders\n";
    y += "    idempotency:\n";
    y += "      methods: [POST, PATCH]\n";
    y += "      record_ttl: 24h\n";
    return y;
}

void replace(std::string& text, const std::string& from, const std::string& to)
{
    auto pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    text.replace(pos, from.size(), to);
}

} // namespace

TEST_SUITE_BEGIN("lifecycle");

TEST_CASE("client disconnects while the upstream works: the answer is recorded and the retry replays it")
{
    gateway_fixture f;
    const std::string key = unique_key("gone");
    {
        http_connection conn(f.port(), io_timeout);
        conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                      "\r\nX-Test-Delay-Ms: 300\r\nContent-Length: 2\r\n\r\n{}");
        REQUIRE(f.wait_for_executions(1));
        conn.close();
    }

    // The retry may still find the first call in flight (409 + Retry-After); once it settles
    // the retry must get the recorded answer. Bounded: ~5 s.
    http_response retry;
    auto deadline = std::chrono::steady_clock::now() + 5s;
    for (;;) {
        retry = f.post("/api/orders", key, "{}");
        if (retry.status != 409 || std::chrono::steady_clock::now() > deadline)
            break;
        CHECK_FALSE(retry.header("retry-after").empty());
        std::this_thread::sleep_for(20ms); // retry cadence of a well-behaved client
    }
    CHECK(retry.status == 201);
    CHECK(retry.header("idempotent-replayed") == "true");
    CHECK(retry.header("x-upstream-execution") == "1");
    CHECK(f.executions() == 1);
}

TEST_CASE("SIGTERM lets the in-flight request finish, then the process exits 0")
{
    int sig = SIGTERM;
    SUBCASE("SIGTERM")
    {
        sig = SIGTERM;
    }
    SUBCASE("SIGINT")
    {
        sig = SIGINT;
    }
    CAPTURE(sig);
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + unique_key("drain") +
                  "\r\nX-Test-Delay-Ms: 500\r\nContent-Length: 2\r\n\r\n{}");
    REQUIRE(f.wait_for_executions(1));
    f.process().signal(sig);

    auto res = conn.read_response();
    CHECK(res.status == 201);
    CHECK(res.header("x-upstream-execution") == "1");
    CHECK(res.body.find("\"execution\":1") != std::string::npos);
    CHECK(f.process().wait_exit(10s) == 0);
}

TEST_CASE("a request finished during the drain is recorded for the next gateway process")
{
    gateway_fixture f;
    const std::string key = unique_key("drain-record");
    http_connection conn(f.port(), io_timeout);
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                  "\r\nX-Test-Delay-Ms: 400\r\nContent-Length: 2\r\n\r\n{}");
    REQUIRE(f.wait_for_executions(1));
    f.process().signal(SIGTERM);
    auto first = conn.read_response();
    REQUIRE(first.status == 201);
    REQUIRE(f.process().wait_exit(10s) == 0);

    f.start_gateway();
    auto again = f.post("/api/orders", key, "{}");
    CHECK(again.status == 201);
    if (f.store.persistent()) {
        // Redis outlives the gateway: the drained request's record is there.
        CHECK(again.header("idempotent-replayed") == "true");
        CHECK(again.body == first.body);
        CHECK(f.executions() == 1);
    } else {
        // The memory store dies with its process (documented): the key runs again.
        CHECK(again.header("idempotent-replayed") != "true");
        CHECK(f.executions() == 2);
    }
}

TEST_CASE("while draining, new requests never reach the upstream")
{
    gateway_fixture f;
    http_connection in_flight(f.port(), io_timeout);
    in_flight.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " +
                       unique_key("drain") + "\r\nX-Test-Delay-Ms: 800\r\nContent-Length: 2\r\n\r\n{}");
    REQUIRE(f.wait_for_executions(1));
    f.process().signal(SIGTERM);
    // The signal is handled asynchronously: wait for the gateway to say it is draining.
    REQUIRE(f.process().wait_for_line(
        [](const std::string& l) { return l.find("\"msg\":\"draining\"") != std::string::npos; }, 5s));

    // Until the drain ends, a newcomer is refused at connect, closed, or answered 503; it is
    // never forwarded. Bounded by the in-flight request's remaining ~800 ms.
    auto deadline = std::chrono::steady_clock::now() + 600ms;
    int attempts = 0, forwarded = 0;
    while (std::chrono::steady_clock::now() < deadline && f.process().running()) {
        // Attempt cadence; the first pause also covers the acceptors' close, which the drain
        // posts to each I/O thread right after logging "draining".
        std::this_thread::sleep_for(50ms);
        ++attempts;
        try {
            auto res = gateway_request(f.port(), "POST", "/api/orders",
                                       {{"Idempotency-Key", unique_key("late")}}, "{}");
            if (res.status != 503)
                ++forwarded;
        } catch (const std::exception&) {
            // refused or closed: not accepted
        }
    }
    CHECK(attempts > 0);
    CHECK(forwarded == 0);
    CHECK(in_flight.read_response().status == 201);
    CHECK(f.process().wait_exit(10s) == 0);
    CHECK(f.upstream.executions() == 1);
}

TEST_CASE("SIGTERM with nothing in flight exits 0 promptly")
{
    gateway_fixture f;
    REQUIRE(f.post("/api/orders", unique_key("idle"), "{}").status == 201);
    auto start = std::chrono::steady_clock::now();
    f.process().signal(SIGTERM);
    CHECK(f.process().wait_exit(10s) == 0);
    CHECK(std::chrono::steady_clock::now() - start < 5s);
}

TEST_CASE("SIGUSR1 and SIGUSR2 (logrotate's habit) are logged and never stop the gateway")
{
    gateway_fixture f;
    for (int sig : {SIGUSR1, SIGUSR2}) {
        f.process().signal(sig);
        CHECK(f.process()
                  .wait_for_line(
                      [](const std::string& l) { return l.find("signal ignored") != std::string::npos; }, 5s)
                  .has_value());
    }
    CHECK(f.post("/api/orders", unique_key("after-usr1"), "{}").status == 201);
    f.process().signal(SIGTERM);
    CHECK(f.process().wait_exit(10s) == 0);
}

TEST_CASE("--check accepts a valid config")
{
    temp_dir dir;
    auto path = dir.write_file("ok.yaml", valid_yaml(free_port()));
    auto result = run_idemgate({"--config", path, "--check"});
    INFO(result.output);
    CHECK(result.status == 0);
}

TEST_CASE("bad config messages name the key path")
{
    test_upstream_process upstream;
    temp_dir dir;
    std::string yaml = valid_yaml(upstream.port());
    std::vector<std::string> expected;

    SUBCASE("unknown key")
    {
        replace(yaml, "      record_ttl: 24h\n", "      record_ttl: 24h\n      recrod_ttl: 1h\n");
        expected = {"routes[0].idempotency.recrod_ttl", "unknown key (did you mean \"record_ttl\"?)"};
    }
    SUBCASE("bad duration")
    {
        replace(yaml, "record_ttl: 24h", "record_ttl: 24x");
        expected = {"routes[0].idempotency.record_ttl", "24x", "is not a duration"};
    }
    SUBCASE("port out of range")
    {
        replace(yaml, "listen: \"127.0.0.1:0\"\nadmin", "listen: \"127.0.0.1:70000\"\nadmin");
        expected = {"listen", "70000"};
    }
    SUBCASE("unknown upstream")
    {
        replace(yaml, "upstream: orders", "upstream: billing");
        expected = {"routes[0].upstream", "billing"};
    }
    SUBCASE("bad type")
    {
        replace(yaml, "methods: [POST, PATCH]", "methods: {POST: 1}");
        expected = {"routes[0].idempotency.methods"};
    }
    auto path = dir.write_file("bad.yaml", yaml);

    auto checked = run_idemgate({"--config", path, "--check"});
    INFO("--check output:\n", checked.output);
    CHECK(checked.status == 1);
    for (auto& fragment : expected)
        CHECK(checked.output.find(fragment) != std::string::npos);
    // Each problem as FILE:LINE:COLUMN: <key path>: <message>, as compilers write it.
    CHECK(checked.output.find("  " + path + ":") != std::string::npos);
    CHECK(checked.output.find(": " + expected.front()) != std::string::npos);

    // Running (not just checking) with the same file refuses to start.
    auto run = run_idemgate({"--config", path});
    INFO("run output:\n", run.output);
    REQUIRE(run.status.has_value());
    CHECK(*run.status != 0);
    CHECK(run.output.find(expected.front()) != std::string::npos);
    CHECK(run.output.find("\"msg\":\"listening\"") == std::string::npos);
}

#ifdef IDEMGATE_TEST_BACKEND
TEST_CASE("a setting the configured store cannot serve is refused at the key that asks for it")
{
    // The test-only map store keeps no tenant quotas: a limited tenant is a configuration error
    // before start-up, not a 503 per request.
    temp_dir dir;
    std::string yaml = valid_yaml(free_port());
    replace(yaml, "  type: memory\n", "  type: map\n");
    yaml += "tenants:\n  acme:\n    max_in_flight: 2\n";
    const std::string expected = "tenants.acme.max_in_flight: store.type map does not keep tenant quotas";
    auto path = dir.write_file("quotas.yaml", yaml);
    auto checked = run_idemgate({"--config", path, "--check"});
    INFO("--check output:\n", checked.output);
    CHECK(checked.status == 1);
    CHECK(checked.output.find(expected) != std::string::npos);
    auto run = run_idemgate({"--config", path});
    INFO("run output:\n", run.output);
    REQUIRE(run.status.has_value());
    CHECK(*run.status != 0);
    CHECK(run.output.find(expected) != std::string::npos);

    // Without the tenant's limit the same store is accepted.
    replace(yaml, "    max_in_flight: 2\n", "    record_ttl: 1h\n");
    auto fine = run_idemgate({"--config", dir.write_file("fine.yaml", yaml), "--check"});
    INFO("--check output:\n", fine.output);
    CHECK(fine.status == 0);
}
#endif

TEST_CASE("missing config file is an error naming the file")
{
    const std::string path = "/nonexistent/idemgate-" + unique_key("missing") + ".yaml";
    auto checked = run_idemgate({"--config", path, "--check"});
    INFO(checked.output);
    CHECK(checked.status == 1);
    CHECK(checked.output.find(path) != std::string::npos);
    auto run = run_idemgate({"--config", path});
    REQUIRE(run.status.has_value());
    CHECK(*run.status != 0);
}

TEST_CASE("command line: -c, the default path, exit statuses 2 and 3, one cause per message")
{
    test_upstream_process upstream;
    temp_dir dir;
    auto path = dir.write_file("ok.yaml", valid_yaml(upstream.port()));
    CHECK(run_idemgate({"-c", path, "--check"}).status == 0);
    auto printed = run_idemgate({"-c", path, "--print-config"});
    CHECK(printed.status == 0);
    CHECK(printed.output.find("\nroutes:\n") != std::string::npos);
    CHECK(printed.output.find("record_ttl: 1d") != std::string::npos); // the file's 24h, after defaults
    // Without -c: the packaged default, named when it cannot be read.
    auto dflt = run_idemgate({"--check"});
    if (!std::filesystem::exists("/etc/idemgate/idemgate.yaml")) {
        CHECK(dflt.status == 1);
        CHECK(dflt.output.find("/etc/idemgate/idemgate.yaml") != std::string::npos);
    }
    auto usage = run_idemgate({"-c"});
    CHECK(usage.status == 2);
    CHECK(usage.output.find("-c needs a file") != std::string::npos);
    CHECK(run_idemgate({"--frobnicate"}).status == 2);

    // A listen port already taken: exit 3 (cannot start), and the cause said once.
    boost::asio::io_context ioc;
    boost::asio::ip::tcp::acceptor taken(ioc, {boost::asio::ip::make_address("127.0.0.1"), 0});
    auto busy = valid_yaml(upstream.port());
    replace(busy, "listen: \"127.0.0.1:0\"",
            "listen: \"127.0.0.1:" + std::to_string(taken.local_endpoint().port()) + "\"");
    auto started = run_idemgate({"-c", dir.write_file("busy.yaml", busy)});
    INFO(started.output);
    CHECK(started.status == 3);
    auto first = started.output.find("Address already in use");
    REQUIRE(first != std::string::npos);
    // One line on stderr and one JSON log line, each saying it once.
    for (auto& line : split_lines(started.output)) {
        auto at = line.find("Address already in use");
        if (at != std::string::npos)
            CHECK(line.find("Address already in use", at + 1) == std::string::npos);
    }
}

TEST_CASE("--help and --version answer and exit 0")
{
    auto help = run_idemgate({"--help"});
    CHECK(help.status == 0);
    CHECK(help.output.find("--config") != std::string::npos);
    auto version = run_idemgate({"--version"});
    CHECK(version.status == 0);
    CHECK(version.output.find("0.1") != std::string::npos);
    CHECK(version.output.find("(commit ") != std::string::npos);
    CHECK(version.output.find("\nallocator: ") != std::string::npos);
    // The I/O backend the gateway under test was built with.
    CHECK(version.output.find(", " + gateway_io_backend() + ")") != std::string::npos);
}

TEST_SUITE_END();
