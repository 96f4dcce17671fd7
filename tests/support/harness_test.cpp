// SPDX-License-Identifier: Apache-2.0
// Self-test of the harness: the real redis-server and the test upstream start, answer and stop.
#include "idemgate/test/harness.hpp"

#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <signal.h>
#include <sys/types.h>

using namespace idemgate::test;

TEST_CASE("free_port returns a bindable non-zero port")
{
    auto port = free_port();
    CHECK(port != 0);
    CHECK(port != 6379);
}

TEST_CASE("temp_dir writes files and removes itself")
{
    std::string path;
    {
        temp_dir dir;
        path = dir.path();
        auto file = dir.write_file("a.txt", "hello");
        std::ifstream in(file);
        std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        CHECK(content == "hello");
    }
    CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("child_process captures stdout and stderr lines and the exit status")
{
    child_process proc("sh", {"-c", "echo one; echo two >&2; exit 3"});
    auto line = proc.wait_for_line([](const std::string& l) { return l == "two"; });
    REQUIRE(line);
    CHECK(proc.wait_exit() == 3);
    auto lines = proc.lines();
    CHECK(std::find(lines.begin(), lines.end(), "one") != lines.end());
    CHECK_FALSE(proc.running());
}

TEST_CASE("child_process reports a signal as 128+signal and wait_for_line times out")
{
    child_process proc("sleep", {"30"});
    CHECK(proc.running());
    CHECK_FALSE(proc.wait_for_line([](const std::string&) { return true; }, 50ms));
    proc.signal(SIGTERM);
    CHECK(proc.wait_exit() == 128 + SIGTERM);
}

TEST_CASE("redis_server starts, answers PING and commands, stops and restarts")
{
    redis_server redis;
    CHECK(redis.port() != 6379);
    CHECK(redis.command({"PING"}) == "+PONG\r\n");
    CHECK(redis.command({"SET", "k", "v"}) == "+OK\r\n");
    CHECK(redis.command({"GET", "k"}) == "$1\r\nv\r\n");
    CHECK(redis.command({"GET", "missing"}) == "$-1\r\n");
    CHECK(redis.command({"MGET", "k", "missing"}) == "*2\r\n$1\r\nv\r\n$-1\r\n");
    redis.stop(true);
    CHECK_THROWS(redis.command({"PING"}));
    redis.start();
    CHECK(redis.command({"PING"}) == "+PONG\r\n");
}

namespace {
http_response head_then_get(std::uint16_t port)
{
    http_connection conn(port);
    auto res = conn.request("HEAD", "/x");
    // In step afterwards: no stray body bytes.
    CHECK(conn.request("GET", "/y").status == 201);
    return res;
}
} // namespace

TEST_CASE("test upstream answers as scripted and counts executions")
{
    test_upstream_process upstream;
    CHECK(upstream.executions() == 0);

    http_connection conn(upstream.port());
    auto res = conn.request("POST", "/api/orders", {{"X-Custom", "yes"}}, R"({"a":1})");
    CHECK(res.status == 201);
    CHECK(res.header("x-upstream-execution") == "1");
    CHECK(res.header("etag") == "\"e1\"");
    CHECK(res.header("location") == "/api/orders/1");
    CHECK(res.header("content-type") == "application/json");
    CHECK(res.header("x-hop") == "secret");
    CHECK(res.body.find(R"("method":"POST")") != std::string::npos);
    CHECK(res.body.find(R"("body":"{\"a\":1}")") != std::string::npos);
    CHECK(res.body.find(R"("x-custom":"yes")") != std::string::npos);

    // Same connection (keep-alive): status, chunked body, body size, cookie.
    auto chunked = conn.request("POST", "/x",
                                {{"X-Test-Status", "503"},
                                 {"X-Test-Chunked", "1"},
                                 {"X-Test-Body-Size", "3000"},
                                 {"X-Test-Set-Cookie", "1"}});
    CHECK(chunked.status == 503);
    CHECK(chunked.header("transfer-encoding") == "chunked");
    CHECK(chunked.body == std::string(3000, 'x'));
    CHECK(chunked.header("set-cookie") == "session=abc");
    CHECK(chunked.header("x-upstream-execution") == "2");

    auto start = std::chrono::steady_clock::now();
    auto delayed = conn.request("GET", "/slow", {{"X-Test-Delay-Ms", "200"}, {"X-Test-Close", "1"}});
    CHECK(std::chrono::steady_clock::now() - start >= 200ms);
    CHECK(delayed.status == 201);
    CHECK(conn.closed_by_peer());

    auto head = head_then_get(upstream.port());
    CHECK(head.status == 201);
    CHECK(head.body.empty());
    CHECK(std::stoul(head.header("content-length")) > 0);

    http_connection aborted(upstream.port());
    CHECK_THROWS(aborted.request("POST", "/x", {{"X-Test-Abort", "1"}}, "{}"));

    CHECK(upstream.executions() == 6);
    CHECK(http_request(upstream.port(), "POST", "/__reset").status == 200);
    CHECK(upstream.executions() == 0);
}
