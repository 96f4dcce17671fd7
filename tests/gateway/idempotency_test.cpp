// SPDX-License-Identifier: Apache-2.0
// The idempotency contract, end to end: real idemgate, real test upstream, sockets.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <latch>
#include <mutex>
#include <thread>

using namespace idemgate::test;

TEST_SUITE_BEGIN("idempotency");

TEST_CASE("duplicate request runs the upstream once")
{
    gateway_fixture f;
    const std::string key = unique_key("order");
    const std::string body = R"({"item":"book","qty":1})";

    auto first = f.post("/api/orders", key, body);
    REQUIRE(first.status == 201);
    CHECK(first.header("idempotent-replayed") != "true");
    CHECK(first.body.find(R"("body":"{\"item\":\"book\",\"qty\":1}")") != std::string::npos);

    auto second = f.post("/api/orders", key, body);
    CHECK(second.status == first.status);
    CHECK(second.body == first.body);
    CHECK(second.header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("reused key with a different body gets 409 without reaching the upstream")
{
    gateway_fixture f;
    const std::string key = unique_key("order");
    REQUIRE(f.post("/api/orders", key, R"({"item":"book"})").status == 201);

    auto other = f.post("/api/orders", key, R"({"item":"lamp"})");
    CHECK(is_problem(other, 409));
    CHECK(other.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("reused key on a different path or query is a mismatch")
{
    gateway_fixture f;
    const std::string key = unique_key("order");
    REQUIRE(f.post("/api/orders?a=1", key, "{}").status == 201);
    CHECK(is_problem(f.post("/api/orders?a=2", key, "{}"), 409));
    CHECK(is_problem(f.post("/api/other", key, "{}"), 409));
    CHECK(f.executions() == 1);
}

TEST_CASE("mismatch status 422 is a config choice")
{
    gateway_options options;
    options.idempotency_extra = "      mismatch_status: 422\n";
    gateway_fixture f(options);
    const std::string key = unique_key("order");
    REQUIRE(f.post("/api/orders", key, R"({"item":"book"})").status == 201);
    CHECK(is_problem(f.post("/api/orders", key, R"({"item":"lamp"})"), 422));
    CHECK(f.executions() == 1);
}

TEST_CASE("server error is not cached and the retry runs")
{
    gateway_fixture f;
    const std::string key = unique_key("order");
    const std::string body = R"({"item":"book"})";

    auto failed = f.post("/api/orders", key, body, {{"X-Test-Status", "500"}});
    CHECK(failed.status == 500);
    CHECK(failed.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 1);

    auto unavailable = f.post("/api/orders", key, body, {{"X-Test-Status", "503"}});
    CHECK(unavailable.status == 503);
    CHECK(unavailable.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);

    // The fingerprint ignores headers, so this is the same request retried; it really runs.
    auto retried = f.post("/api/orders", key, body);
    CHECK(retried.status == 201);
    CHECK(retried.header("idempotent-replayed") != "true");
    CHECK(retried.header("x-upstream-execution") == "3");
    CHECK(f.executions() == 3);

    auto replayed = f.post("/api/orders", key, body);
    CHECK(replayed.status == 201);
    CHECK(replayed.header("idempotent-replayed") == "true");
    CHECK(replayed.body == retried.body);
    CHECK(f.executions() == 3);
}

TEST_CASE("client error from the upstream is a settled result and is replayed")
{
    gateway_fixture f;
    const std::string key = unique_key("order");
    auto first = f.post("/api/orders", key, "{}", {{"X-Test-Status", "422"}});
    REQUIRE(first.status == 422);
    auto second = f.post("/api/orders", key, "{}");
    CHECK(second.status == 422);
    CHECK(second.body == first.body);
    CHECK(second.header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("64 concurrent duplicates of one key run the upstream exactly once")
{
    gateway_fixture f;
    const std::string key = unique_key("storm");
    const std::string body = R"({"item":"storm"})";
    constexpr int clients = 64;

    std::vector<std::unique_ptr<http_connection>> connections;
    for (int i = 0; i < clients; ++i)
        connections.push_back(std::make_unique<http_connection>(f.port(), io_timeout));

    std::vector<http_response> responses(clients);
    std::vector<std::string> errors(clients);
    std::latch start(clients);
    std::vector<std::thread> threads;
    for (int i = 0; i < clients; ++i) {
        threads.emplace_back([&, i] {
            start.arrive_and_wait();
            try {
                responses[i] = connections[i]->request("POST", "/api/orders",
                                                       {{"Idempotency-Key", key},
                                                        {"Content-Type", "application/json"},
                                                        {"X-Test-Delay-Ms", "200"}},
                                                       body);
            } catch (const std::exception& e) {
                errors[i] = e.what();
            }
        });
    }
    for (auto& t : threads)
        t.join();

    int success = 0, conflict = 0, other = 0;
    std::string success_body;
    bool bodies_identical = true;
    for (int i = 0; i < clients; ++i) {
        INFO("client ", i, " error: ", errors[i], " raw: ", responses[i].raw);
        CHECK(errors[i].empty());
        auto& res = responses[i];
        if (res.status >= 200 && res.status < 300) {
            ++success;
            if (success_body.empty())
                success_body = res.body;
            bodies_identical = bodies_identical && res.body == success_body;
        } else if (res.status == 409) {
            ++conflict;
            CHECK(is_problem(res, 409));
            CHECK_FALSE(res.header("retry-after").empty());
        } else {
            ++other;
        }
    }
    CHECK(f.executions() == 1);
    CHECK(success >= 1);
    CHECK(success + conflict == clients);
    CHECK(other == 0);
    CHECK(bodies_identical);
    MESSAGE("2xx: ", success, ", 409: ", conflict);

    // After the storm the one recorded answer is what everyone gets.
    auto after = f.post("/api/orders", key, body);
    CHECK(after.header("idempotent-replayed") == "true");
    CHECK(after.body == success_body);
    CHECK(f.executions() == 1);
}

TEST_CASE("duplicate while the first is in flight gets 409 with Retry-After")
{
    gateway_fixture f;
    const std::string key = unique_key("slow");
    http_response first;
    std::thread slow([&] { first = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "600"}}); });
    REQUIRE(f.wait_for_executions(1));

    auto duplicate = f.post("/api/orders", key, "{}");
    slow.join();
    CHECK(is_problem(duplicate, 409));
    CHECK_FALSE(duplicate.header("retry-after").empty());
    CHECK(duplicate.header("idempotency-status") == "in-flight");
    CHECK(first.status == 201);

    auto replay = f.post("/api/orders", key, "{}");
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.body == first.body);
    CHECK(f.executions() == 1);
}

TEST_CASE("tenant isolation: the same key under two tenants is two requests")
{
    gateway_fixture f;
    const std::string key = unique_key("shared");
    auto a1 = f.post("/tenant/orders", key, "{}", {{"X-Tenant-ID", "alpha"}});
    auto b1 = f.post("/tenant/orders", key, "{}", {{"X-Tenant-ID", "beta"}});
    REQUIRE(a1.status == 201);
    REQUIRE(b1.status == 201);
    CHECK(b1.header("idempotent-replayed") != "true");
    CHECK(a1.body != b1.body);
    CHECK(f.executions() == 2);

    auto a2 = f.post("/tenant/orders", key, "{}", {{"X-Tenant-ID", "alpha"}});
    auto b2 = f.post("/tenant/orders", key, "{}", {{"X-Tenant-ID", "beta"}});
    CHECK(a2.header("idempotent-replayed") == "true");
    CHECK(b2.header("idempotent-replayed") == "true");
    CHECK(a2.body == a1.body);
    CHECK(b2.body == b1.body);
    CHECK(f.executions() == 2);

    // A different body under the other tenant is not a mismatch there: scopes are independent.
    auto c = f.post("/tenant/orders", key, R"({"x":1})", {{"X-Tenant-ID", "gamma"}});
    CHECK(c.status == 201);
    CHECK(f.executions() == 3);
}

TEST_CASE("tenant and key boundaries cannot be forged with separators")
{
    gateway_fixture f;
    // If the scope were tenant + ":" + key unescaped, these two would be the same record.
    auto a = f.post("/tenant/orders", "c", "{}", {{"X-Tenant-ID", "a:b"}});
    auto b = f.post("/tenant/orders", "b:c", "{}", {{"X-Tenant-ID", "a"}});
    CHECK(a.status == 201);
    CHECK(b.status == 201);
    CHECK(b.header("idempotent-replayed") != "true");
    CHECK(b.header("x-upstream-execution") == "2");
    CHECK(f.executions() == 2);
}

TEST_CASE("keyed request without the tenant header gets 400")
{
    gateway_fixture f;
    auto res = f.post("/tenant/orders", unique_key("k"), "{}");
    CHECK(is_problem(res, 400));
    CHECK(f.executions() == 0);
}

TEST_CASE("missing key on a route with required: true gets 400")
{
    gateway_fixture f;
    auto res = f.post("/strict/orders", "", "{}");
    CHECK(is_problem(res, 400));
    CHECK(f.executions() == 0);
    CHECK(f.post("/strict/orders", unique_key("k"), "{}").status == 201);
    CHECK(f.executions() == 1);
}

TEST_CASE("invalid idempotency keys get 400 before the upstream is called")
{
    gateway_fixture f;
    auto send = [&](const std::string& key_lines) {
        http_connection conn(f.port(), io_timeout);
        conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n" + key_lines +
                      "\r\n{}");
        return conn.read_response();
    };
    SUBCASE("empty")
    {
        CHECK(is_problem(send("Idempotency-Key: \r\n"), 400));
    }
    SUBCASE("longer than 255 characters")
    {
        CHECK(is_problem(send("Idempotency-Key: " + std::string(256, 'k') + "\r\n"), 400));
    }
    SUBCASE("contains a space")
    {
        CHECK(is_problem(send("Idempotency-Key: a b\r\n"), 400));
    }
    SUBCASE("contains a non-ASCII byte")
    {
        CHECK(is_problem(send("Idempotency-Key: caf\xc3\xa9\r\n"), 400));
    }
    SUBCASE("contains a control character")
    {
        CHECK(is_problem(send("Idempotency-Key: a\x01z\r\n"), 400));
    }
    SUBCASE("two header lines")
    {
        CHECK(is_problem(send("Idempotency-Key: one\r\nIdempotency-Key: two\r\n"), 400));
    }
    SUBCASE("two identical header lines")
    {
        CHECK(is_problem(send("Idempotency-Key: same\r\nIdempotency-Key: same\r\n"), 400));
    }
    CHECK(f.executions() == 0);
}

TEST_CASE("a key of exactly 255 visible characters is accepted and replayed")
{
    gateway_fixture f;
    std::string key(255, 'k');
    key[0] = '!';
    key[254] = '~';
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    CHECK(f.post("/api/orders", key, "{}").header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("the key header name is case-insensitive")
{
    gateway_fixture f;
    const std::string key = unique_key("case");
    auto a = gateway_request(f.port(), "POST", "/api/orders", {{"idempotency-key", key}}, "{}");
    auto b = gateway_request(f.port(), "POST", "/api/orders", {{"IDEMPOTENCY-KEY", key}}, "{}");
    CHECK(a.status == 201);
    CHECK(b.header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("a 204 answer is replayed as 204 without a body")
{
    gateway_fixture f;
    const std::string key = unique_key("nocontent");
    http_connection conn(f.port(), io_timeout);
    auto a = conn.request("POST", "/api/orders", {{"Idempotency-Key", key}, {"X-Test-Status", "204"}}, "{}");
    auto b = conn.request("POST", "/api/orders", {{"Idempotency-Key", key}}, "{}");
    CHECK(a.status == 204);
    CHECK(b.status == 204);
    CHECK(b.header("idempotent-replayed") == "true");
    CHECK(b.body.empty());
    // Still in step on the same connection after two bodiless answers.
    CHECK(conn.request("GET", "/api/orders/1").status == 201);
    CHECK(f.executions() == 2);
}

TEST_CASE("requests without a key pass through and are never stored")
{
    gateway_fixture f;
    auto a = f.post("/api/orders", "", R"({"item":"book"})");
    auto b = f.post("/api/orders", "", R"({"item":"book"})");
    CHECK(a.status == 201);
    CHECK(b.status == 201);
    CHECK(b.header("idempotent-replayed") != "true");
    CHECK(a.header("x-upstream-execution") == "1");
    CHECK(b.header("x-upstream-execution") == "2");
    CHECK(f.executions() == 2);
}

TEST_CASE("GET and methods not listed pass through even with a key")
{
    gateway_fixture f;
    const std::string key = unique_key("get");
    for (const char* method : {"GET", "PUT", "DELETE"}) {
        INFO(method);
        auto before = f.executions();
        auto a = gateway_request(f.port(), method, "/api/orders/1", {{"Idempotency-Key", key}});
        auto b = gateway_request(f.port(), method, "/api/orders/1", {{"Idempotency-Key", key}});
        CHECK(a.status == 201);
        CHECK(b.status == 201);
        CHECK(b.header("idempotent-replayed") != "true");
        CHECK(a.body.find(std::string("\"method\":\"") + method + "\"") != std::string::npos);
        CHECK(f.executions() == before + 2);
    }
}

TEST_CASE("PATCH is guarded like POST")
{
    gateway_fixture f;
    const std::string key = unique_key("patch");
    auto a = gateway_request(f.port(), "PATCH", "/api/orders/7", {{"Idempotency-Key", key}}, R"({"qty":2})");
    auto b = gateway_request(f.port(), "PATCH", "/api/orders/7", {{"Idempotency-Key", key}}, R"({"qty":2})");
    CHECK(a.status == 201);
    CHECK(b.header("idempotent-replayed") == "true");
    CHECK(b.body == a.body);
    CHECK(f.executions() == 1);
}

TEST_CASE("a route without idempotency never replays")
{
    gateway_fixture f;
    const std::string key = unique_key("plain");
    auto a = f.post("/plain/orders", key, "{}");
    auto b = f.post("/plain/orders", key, "{}");
    CHECK(a.status == 201);
    CHECK(b.status == 201);
    CHECK(b.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
}

TEST_CASE("chunked request body gets the same fingerprint as a Content-Length body")
{
    gateway_fixture f;
    const std::string key = unique_key("chunked");
    const std::string body = R"({"item":"book","note":"split across chunks"})";
    auto first = f.post("/api/orders", key, body);
    REQUIRE(first.status == 201);

    http_connection conn(f.port(), io_timeout);
    std::string part1 = body.substr(0, 10), part2 = body.substr(10);
    auto hex = [](std::size_t n) {
        char buf[32];
        std::snprintf(buf, sizeof(buf), "%zx", n);
        return std::string(buf);
    };
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                  "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
                  hex(part1.size()) + "\r\n" + part1 + "\r\n" + hex(part2.size()) + "\r\n" + part2 +
                  "\r\n0\r\n\r\n");
    auto second = conn.read_response();
    CHECK(second.status == 201);
    CHECK(second.header("idempotent-replayed") == "true");
    CHECK(second.body == first.body);
    CHECK(f.executions() == 1);
}

TEST_CASE("chunked request body is re-framed with Content-Length for the upstream")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    conn.send_raw(
        "POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + unique_key("reframe") +
        "\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n");
    auto res = conn.read_response();
    REQUIRE(res.status == 201);
    CHECK(res.body.find(R"("body":"abcde")") != std::string::npos);
    CHECK(res.body.find(R"("content-length":"5")") != std::string::npos);
    CHECK(res.body.find("transfer-encoding") == std::string::npos);
}

TEST_CASE("replay keeps ETag, Location, Content-Type and application headers but never Set-Cookie")
{
    gateway_fixture f;
    const std::string key = unique_key("cookie");
    auto first = f.post("/api/orders", key, "{}", {{"X-Test-Set-Cookie", "1"}});
    REQUIRE(first.status == 201);
    auto replay = f.post("/api/orders", key, "{}", {{"X-Test-Set-Cookie", "1"}});
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK_FALSE(replay.has_header("set-cookie"));
    CHECK(replay.header("etag") == first.header("etag"));
    CHECK(replay.header("etag") == "\"e1\"");
    CHECK(replay.header("location") == first.header("location"));
    CHECK(replay.header("location") == "/api/orders/1");
    CHECK(replay.header("content-type") == "application/json");
    CHECK(replay.header("x-upstream-execution") == "1");
    CHECK_FALSE(replay.has_header("x-hop"));
    CHECK_FALSE(replay.has_header("keep-alive"));
    CHECK(f.executions() == 1);
}

TEST_CASE("chunked and large upstream responses are replayed byte for byte")
{
    gateway_fixture f;
    SUBCASE("chunked")
    {
        const std::string key = unique_key("chunked-response");
        auto first = f.post("/api/orders", key, "{}", {{"X-Test-Chunked", "1"}});
        REQUIRE(first.status == 201);
        auto replay = f.post("/api/orders", key, "{}");
        CHECK(replay.header("idempotent-replayed") == "true");
        CHECK(replay.body == first.body);
    }
    SUBCASE("200 KB body")
    {
        const std::string key = unique_key("big-response");
        auto first = f.post("/api/orders", key, "{}", {{"X-Test-Body-Size", "200000"}});
        REQUIRE(first.status == 201);
        CHECK(first.body == std::string(200000, 'x'));
        auto replay = f.post("/api/orders", key, "{}");
        CHECK(replay.header("idempotent-replayed") == "true");
        CHECK(replay.body == first.body);
    }
    CHECK(f.executions() == 1);
}

TEST_CASE("unreachable upstream gives 502 and releases the key")
{
    gateway_fixture f;
    const std::string key = unique_key("down");
    auto first = f.post("/down/orders", key, "{}");
    CHECK(is_problem(first, 502));
    // Not 409 (still reserved) and not a replay of the 502: the retry really tries again.
    auto second = f.post("/down/orders", key, "{}");
    CHECK(is_problem(second, 502));
    CHECK(second.header("idempotent-replayed") != "true");
}

TEST_CASE("upstream timeout gives 504 and, with on_unknown_outcome: release, the retry runs")
{
    gateway_options options;
    options.idempotency_extra = "      on_unknown_outcome: release\n";
    options.timeouts = "  upstream_response: 300ms\n";
    gateway_fixture f(options);
    const std::string key = unique_key("timeout");
    auto slow = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "1500"}});
    CHECK(is_problem(slow, 504));
    CHECK(f.executions() == 1);

    auto retry = f.post("/api/orders", key, "{}");
    CHECK(retry.status == 201);
    CHECK(retry.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
}

TEST_SUITE_END();
