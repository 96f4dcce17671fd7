// SPDX-License-Identifier: Apache-2.0
// What users expect of any reverse proxy: keep-alive, hop-by-hop stripping, forwarding
// headers, admin endpoints, the access log.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <sstream>
#include <thread>

using namespace idemgate::test;

namespace {

// The upstream echoes the headers it received as "headers":{"name":"value",...}.
boost::json::object echoed_headers(const http_response& echo)
{
    auto body = parse_object(echo.body);
    auto* headers = body.if_contains("headers");
    return headers && headers->is_object() ? headers->as_object() : boost::json::object{};
}

bool forwarded(const http_response& echo, const std::string& lower_name)
{
    return echoed_headers(echo).contains(lower_name);
}

std::string forwarded_value(const http_response& echo, const std::string& lower_name)
{
    auto headers = echoed_headers(echo);
    auto* value = headers.if_contains(lower_name);
    return value && value->is_string() ? std::string(value->as_string()) : std::string{};
}

// Value of the Prometheus sample `name{labels}`, or -1 when absent.
double metric_value(const std::string& text, const std::string& series)
{
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(series + " ", 0) == 0)
            return std::stod(line.substr(series.size() + 1));
    }
    return -1;
}

// The gateway's upstream connections of one kind so far ("opened" or "reused"), from /metrics.
double upstream_connections(gateway_fixture& f, const std::string& kind)
{
    auto metrics = gateway_request(f.gateway->admin_port(), "GET", "/metrics");
    return metric_value(metrics.body, "idemgate_upstream_connections_total{kind=\"" + kind + "\"}");
}

} // namespace

TEST_SUITE_BEGIN("proxy");

TEST_CASE("keep-alive serves several requests on one client connection")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    const std::string key = unique_key("ka");
    auto r1 = conn.request("POST", "/api/orders", {{"Idempotency-Key", key}}, "{}");
    auto r2 = conn.request("POST", "/api/orders", {{"Idempotency-Key", key}}, "{}");
    auto r3 = conn.request("GET", "/api/orders/1");
    auto r4 = conn.request("POST", "/api/orders", {}, "{}");
    auto r5 = conn.request("POST", "/plain/orders", {{"X-Test-Chunked", "1"}}, "{}");
    auto r6 = conn.request("POST", "/api/orders", {{"Idempotency-Key", key + "-b"}}, "{}");
    CHECK(r1.status == 201);
    CHECK(r2.header("idempotent-replayed") == "true");
    CHECK(r2.body == r1.body);
    CHECK(r3.status == 201);
    CHECK(r4.status == 201);
    CHECK(r5.status == 201);
    CHECK(r6.status == 201);
    CHECK(r6.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 5);
    CHECK_FALSE(conn.closed_by_peer(100ms));
}

TEST_CASE("pipelined requests on one connection are answered in order")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    const std::string key = unique_key("pipe");
    auto keyed = [&](const std::string& body) {
        return "POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
               "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    };
    // One write, three requests: executed, replayed, then a keyless GET.
    conn.send_raw(keyed("{}") + keyed("{}") + "GET /api/orders/9 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    auto r1 = conn.read_response();
    auto r2 = conn.read_response();
    auto r3 = conn.read_response();
    CHECK(r1.status == 201);
    CHECK(r1.header("idempotent-replayed") != "true");
    CHECK(r2.header("idempotent-replayed") == "true");
    CHECK(r2.body == r1.body);
    CHECK(r3.status == 201);
    CHECK(r3.body.find(R"("target":"/api/orders/9")") != std::string::npos);
    CHECK(f.executions() == 2);
}

TEST_CASE("an HTTP/1.0 request is answered and the connection closed")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    conn.send_raw("POST /api/orders HTTP/1.0\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + unique_key("h10") +
                  "\r\nContent-Length: 2\r\n\r\n{}");
    auto res = conn.read_response();
    CHECK(res.status == 201);
    CHECK(conn.closed_by_peer());
    CHECK(f.executions() == 1);
}

TEST_CASE("a forwarded answer's Connection field is the one keep-alive asks for, once")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    // HTTP/1.0 asking to keep the connection: its answer says keep-alive, and it stays open.
    conn.send_raw("POST /plain/orders HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n"
                  "Content-Length: 2\r\n\r\n{}");
    auto old = conn.read_response();
    CHECK(old.raw.rfind("HTTP/1.0 201 ", 0) == 0);
    CHECK(old.header("connection") == "keep-alive");
    CHECK(old.headers.count("connection") == 1);
    // HTTP/1.1 on the same connection: persistent by default, no Connection field at all (the
    // upstream's own, hop-by-hop, is not passed on).
    conn.send_raw("POST /plain/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}");
    auto plain = conn.read_response();
    CHECK(plain.status == 201);
    CHECK_FALSE(plain.has_header("connection"));
    // Connection: close, keyed this time: "close" once, then the gateway closes.
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " +
                  unique_key("conn-close") + "\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}");
    auto closing = conn.read_response();
    CHECK(closing.status == 201);
    CHECK(closing.header("connection") == "close");
    CHECK(closing.headers.count("connection") == 1);
    CHECK(conn.closed_by_peer());
    CHECK(f.executions() == 3);
}

TEST_CASE("HEAD passes through without a body")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    auto head = conn.request("HEAD", "/api/orders/1", {{"Idempotency-Key", unique_key("head")}});
    CHECK(head.status == 201);
    CHECK(head.body.empty());
    // The connection is still usable: the HEAD answer carried no stray body bytes.
    auto next = conn.request("GET", "/api/orders/2");
    CHECK(next.status == 201);
    CHECK(next.body.find(R"("target":"/api/orders/2")") != std::string::npos);
    CHECK(f.executions() == 2);
}

TEST_CASE("connections above max_connections are turned away and the others keep working")
{
    gateway_options options;
    options.limits = "  max_connections: 2\n";
    gateway_fixture f(options);
    http_connection a(f.port(), io_timeout), b(f.port(), io_timeout);
    REQUIRE(a.request("GET", "/api/orders/a").status == 201);
    REQUIRE(b.request("GET", "/api/orders/b").status == 201);

    bool turned_away = false;
    try {
        http_connection c(f.port(), io_timeout);
        auto res = c.request("GET", "/api/orders/c");
        turned_away = res.status == 503;
    } catch (const std::exception&) {
        turned_away = true; // accepted then closed, or reset
    }
    CHECK(turned_away);
    CHECK(a.request("GET", "/api/orders/a2").status == 201);
    CHECK(f.executions() == 3);
}

TEST_CASE("keep-alive survives an upstream that closes its connection")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    for (int i = 0; i < 4; ++i) {
        INFO("request ", i);
        auto res = conn.request("POST", "/api/orders", {{"X-Test-Close", "1"}}, "{}");
        CHECK(res.status == 201);
    }
    CHECK(f.executions() == 4);
}

TEST_CASE("an interim 103 from the upstream is not taken for the final answer, and the final one is recorded")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    const std::string key = unique_key("interim");
    auto first =
        conn.request("POST", "/api/orders", {{"Idempotency-Key", key}, {"X-Test-Interim", "1"}}, "{}");
    CHECK(first.status == 201);
    // No interim status line reached the client (a request ID's hex digits may hold "103").
    CHECK(first.raw.find("HTTP/1.1 103") == std::string::npos);
    CHECK(first.raw.starts_with("HTTP/1.1 201"));
    // The connection is still in step: the next answer on it is the replay, not a leftover.
    auto replay =
        conn.request("POST", "/api/orders", {{"Idempotency-Key", key}, {"X-Test-Interim", "1"}}, "{}");
    CHECK(replay.status == 201);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.body == first.body);
    CHECK(f.executions() == 1);
}

TEST_CASE("hop-by-hop request headers are not forwarded and forwarding headers are added")
{
    gateway_fixture f;
    auto check_forwarded = [&](const http_response& echo) {
        REQUIRE(echo.status == 201);
        CHECK_FALSE(forwarded(echo, "x-secret-hop"));
        CHECK_FALSE(forwarded(echo, "keep-alive"));
        CHECK_FALSE(forwarded(echo, "te"));
        CHECK_FALSE(forwarded(echo, "upgrade"));
        CHECK_FALSE(forwarded(echo, "proxy-authorization"));
        CHECK_FALSE(forwarded(echo, "proxy-connection"));
        CHECK_FALSE(forwarded(echo, "trailer"));
        CHECK(forwarded_value(echo, "connection").find("x-secret-hop") == std::string::npos);
        CHECK(forwarded_value(echo, "connection").find("X-Secret-Hop") == std::string::npos);
        CHECK(forwarded_value(echo, "x-end-to-end") == "kept");
        CHECK(forwarded_value(echo, "x-forwarded-for").find("127.0.0.1") != std::string::npos);
        CHECK(forwarded_value(echo, "x-forwarded-proto") == "http");
        CHECK(forwarded_value(echo, "x-forwarded-host") == "orders.example");
    };
    std::vector<std::pair<std::string, std::string>> headers{
        {"Host", "orders.example"},
        {"Connection", "keep-alive, X-Secret-Hop"},
        {"X-Secret-Hop", "do-not-forward"},
        {"Keep-Alive", "timeout=5"},
        {"TE", "trailers"},
        {"Trailer", "X-Checksum"},
        {"Upgrade", "websocket"},
        {"Proxy-Authorization", "Basic c2VjcmV0OnNlY3JldA=="},
        {"Proxy-Connection", "keep-alive"},
        {"X-End-To-End", "kept"},
    };
    SUBCASE("keyless pass-through")
    {
        check_forwarded(gateway_request(f.port(), "POST", "/api/orders", headers, "{}"));
    }
    SUBCASE("keyed request")
    {
        auto keyed = headers;
        keyed.emplace_back("Idempotency-Key", unique_key("hop"));
        check_forwarded(gateway_request(f.port(), "POST", "/api/orders", keyed, "{}"));
    }
    SUBCASE("route without idempotency")
    {
        check_forwarded(gateway_request(f.port(), "GET", "/plain/orders", headers));
    }
}

TEST_CASE("X-Forwarded-For keeps the client's existing chain")
{
    gateway_fixture f;
    auto echo = gateway_request(f.port(), "POST", "/api/orders", {{"X-Forwarded-For", "203.0.113.7"}}, "{}");
    REQUIRE(echo.status == 201);
    auto xff = forwarded_value(echo, "x-forwarded-for");
    CHECK(xff.find("203.0.113.7") == 0);
    CHECK(xff.find("127.0.0.1") != std::string::npos);
}

TEST_CASE("hop-by-hop response headers are not returned to the client")
{
    gateway_fixture f;
    auto check_response = [](const http_response& res) {
        CHECK_FALSE(res.has_header("x-hop"));
        CHECK_FALSE(res.has_header("keep-alive"));
        CHECK(res.header("connection").find("X-Hop") == std::string::npos);
        CHECK(res.header("connection").find("x-hop") == std::string::npos);
        CHECK(res.header("x-upstream-execution") != "");
        CHECK(res.header("etag") != "");
    };
    const std::string key = unique_key("hop-response");
    auto first = f.post("/api/orders", key, "{}");
    check_response(first);
    auto replay = f.post("/api/orders", key, "{}");
    CHECK(replay.header("idempotent-replayed") == "true");
    check_response(replay);
    check_response(f.post("/plain/orders", "", "{}"));
    // A chunked upstream answer is re-framed: the client never sees the upstream's framing
    // headers twice, and the body arrives intact.
    auto chunked = f.post("/plain/orders", "", "{}", {{"X-Test-Chunked", "1"}, {"X-Test-Body-Size", "5000"}});
    CHECK(chunked.body == std::string(5000, 'x'));
    CHECK(chunked.headers.count("content-length") + chunked.headers.count("transfer-encoding") == 1);
    CHECK(chunked.header("content-length") == "5000");
    // An answer with its own Content-Length keeps exactly one, the body's size.
    auto sized = f.post("/plain/orders", "", "{}", {{"X-Test-Body-Size", "12"}});
    CHECK(sized.body == std::string(12, 'x'));
    CHECK(sized.headers.count("content-length") == 1);
    CHECK(sized.header("content-length") == "12");
}

TEST_CASE("admin port answers healthz, readyz and metrics by outcome")
{
    gateway_fixture f;
    REQUIRE(f.gateway->admin_port() != 0);
    auto health = gateway_request(f.gateway->admin_port(), "GET", "/healthz");
    CHECK(health.status == 200);
    auto ready = gateway_request(f.gateway->admin_port(), "GET", "/readyz");
    CHECK(ready.status == 200);

    const std::string key = unique_key("metrics");
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    REQUIRE(f.post("/api/orders", key, "{}").header("idempotent-replayed") == "true");
    REQUIRE(f.post("/api/orders", key, R"({"other":1})").status == 409);
    REQUIRE(f.post("/api/orders", "", "{}").status == 201);

    // Outcomes are counted when a request finishes, which may be just after its response
    // reached us: poll /metrics (bounded) until every counter shows up.
    const std::vector<std::string> outcomes{"executed", "replayed", "mismatch", "pass_through"};
    http_response metrics;
    auto all_counted = [&] {
        for (auto& o : outcomes)
            if (metric_value(metrics.body, "idemgate_requests_total{outcome=\"" + o + "\"}") < 1)
                return false;
        return true;
    };
    auto deadline = std::chrono::steady_clock::now() + 3s;
    do {
        metrics = gateway_request(f.gateway->admin_port(), "GET", "/metrics");
        REQUIRE(metrics.status == 200);
        if (!all_counted())
            std::this_thread::sleep_for(10ms); // poll cadence
    } while (!all_counted() && std::chrono::steady_clock::now() < deadline);
    INFO(metrics.body);
    for (auto& o : outcomes) {
        CAPTURE(o);
        CHECK(metric_value(metrics.body, "idemgate_requests_total{outcome=\"" + o + "\"}") >= 1);
    }
    CHECK(metric_value(metrics.body, R"(idemgate_requests_total{outcome="conflict"})") == 0);
}

TEST_CASE("metrics: requests by route, method and status class")
{
    gateway_fixture f;
    const std::string key = unique_key("route-metrics");
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    REQUIRE(f.post("/api/orders", key, "{}").status == 201); // a replay: counted like any answer
    REQUIRE(f.post("/api/orders", key, R"({"other":1})").status == 409);
    REQUIRE(gateway_request(f.port(), "GET", "/plain/x").status == 201);
    REQUIRE(gateway_request(f.port(), "BREW", "/plain/x").status == 201);
    REQUIRE(gateway_request(f.port(), "GET", "/nowhere").status == 404);
    // Refused while its header was read: no route, and no method either.
    http_connection raw(f.port(), io_timeout);
    raw.send_raw("POST /api/x HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab");
    REQUIRE(raw.read_response().status == 400);

    const std::vector<std::pair<std::string, double>> expected{
        {R"(idemgate_route_requests_total{route="/api/",method="POST",code="2xx"})", 2},
        {R"(idemgate_route_requests_total{route="/api/",method="POST",code="4xx"})", 1},
        {R"(idemgate_route_requests_total{route="/plain/",method="GET",code="2xx"})", 1},
        {R"(idemgate_route_requests_total{route="/plain/",method="other",code="2xx"})", 1},
        {R"(idemgate_route_requests_total{route="none",method="GET",code="4xx"})", 1},
        {R"(idemgate_route_requests_total{route="none",method="other",code="4xx"})", 1},
    };
    // Counted once the answer is written: poll (bounded) until the last one shows.
    auto deadline = std::chrono::steady_clock::now() + 3s;
    http_response metrics;
    auto counted = [&] {
        for (const auto& [series, n] : expected)
            if (metric_value(metrics.body, series) < n)
                return false;
        return true;
    };
    do {
        metrics = gateway_request(f.gateway->admin_port(), "GET", "/metrics");
        if (!counted())
            std::this_thread::sleep_for(10ms); // poll cadence
    } while (!counted() && std::chrono::steady_clock::now() < deadline);
    INFO(metrics.body.substr(metrics.body.find("idemgate_route_requests_total")));
    for (const auto& [series, n] : expected) {
        CAPTURE(series);
        CHECK(metric_value(metrics.body, series) == n);
    }
    // Series appear at their first request.
    CHECK(metrics.body.find(R"(route="/api/",method="DELETE")") == std::string::npos);
}

TEST_CASE("access log has one JSON line per request with its outcome and tenant")
{
    gateway_fixture f;
    const std::string key = unique_key("log");
    REQUIRE(f.post("/tenant/orders", key, "{}", {{"X-Tenant-ID", "acme"}}).status == 201);
    REQUIRE(f.post("/tenant/orders", key, "{}", {{"X-Tenant-ID", "acme"}}).header("idempotent-replayed") ==
            "true");
    REQUIRE(f.post("/api/orders", "", "{}").status == 201);
    REQUIRE(f.post("/tenant/orders", key, R"({"x":1})", {{"X-Tenant-ID", "acme"}}).status == 409);
    REQUIRE(f.post("/tenant/orders", "bad key", "{}", {{"X-Tenant-ID", "acme"}}).status == 400);

    // Every access line is a JSON object; find the first with each outcome.
    auto access_line = [&](const std::string& outcome) -> boost::json::object {
        auto line = f.process().wait_for_line(
            [&](const std::string& l) {
                auto obj = parse_object(l);
                auto* o = obj.if_contains("outcome");
                return o && o->is_string() && o->as_string() == outcome;
            },
            5s);
        return line ? parse_object(*line) : boost::json::object{};
    };
    auto executed = access_line("executed");
    auto replayed = access_line("replayed");
    auto pass = access_line("pass_through");
    auto mismatch = access_line("mismatch");
    auto rejected = access_line("rejected");
    REQUIRE_FALSE(executed.empty());
    REQUIRE_FALSE(replayed.empty());
    REQUIRE_FALSE(pass.empty());
    REQUIRE_FALSE(mismatch.empty());
    REQUIRE_FALSE(rejected.empty());
    CHECK(executed["tenant"] == "acme");
    CHECK(replayed["tenant"] == "acme");
    CHECK(mismatch["tenant"] == "acme");
    CHECK(executed["status"] == 201);
    CHECK(replayed["status"] == 201);
    CHECK(mismatch["status"] == 409);
    CHECK(rejected["status"] == 400);
    bool has_latency = false;
    for (auto& field : replayed)
        has_latency = has_latency || field.key().starts_with("latency");
    CHECK(has_latency);
}

TEST_CASE("a pooled upstream connection closed by the upstream while idle is not reused for a POST")
{
    gateway_fixture f;
    auto opened = [&] { return upstream_connections(f, "opened"); };
    // One client connection, so both requests run on the same I/O thread and its upstream pool.
    http_connection conn(f.port(), io_timeout);
    // The upstream keeps the connection after this answer and closes it, unannounced, 50 ms into
    // the wait: the gateway's pooled copy is then dead.
    auto first =
        conn.request("POST", "/api/orders",
                     {{"Idempotency-Key", unique_key("idle-a")}, {"X-Test-Close-Idle-Ms", "50"}}, "{}");
    REQUIRE(first.status == 201);
    const double opened_before = opened();
    // Idle well past the pool's liveness_check_after (100 ms): checked before reuse, found closed.
    // Reused as it is, the POST would be written into the closed connection and, since a POST is
    // never sent twice, answered 502.
    std::this_thread::sleep_for(400ms);
    auto second = conn.request("POST", "/api/orders", {{"Idempotency-Key", unique_key("idle-b")}}, "{}");
    CHECK(second.status == 201);
    CHECK(opened() == opened_before + 1);
}

TEST_CASE("a GET on a pooled connection the upstream just closed goes out again on a new one")
{
    gateway_fixture f;
    auto metric = [&](const std::string& kind) { return upstream_connections(f, kind); };
    http_connection conn(f.port(), io_timeout);
    // Closed by the upstream right after this answer, unannounced. A GET that follows within
    // liveness_check_after takes the pooled connection unchecked, finds it dead before any byte
    // of an answer, and is sent again on a new connection (a GET may be: RFC 9110 9.2.2).
    auto first = conn.request("GET", "/plain/orders/1", {{"X-Test-Close-Idle-Ms", "0"}});
    REQUIRE(first.status == 201);
    const double opened_before = metric("opened");
    const double reused_before = metric("reused");
    std::this_thread::sleep_for(5ms); // the upstream's FIN is in; well inside liveness_check_after
    auto second = conn.request("GET", "/plain/orders/2");
    CHECK(second.status == 201);
    CHECK(metric("opened") == opened_before + 1);
    CHECK(metric("reused") == reused_before + 1);
}

TEST_CASE("an upstream answer with Connection: close leaves no connection in the pool")
{
    gateway_fixture f;
    auto metric = [&](const std::string& kind) { return upstream_connections(f, kind); };
    http_connection conn(f.port(), io_timeout);
    const double opened_before = metric("opened");
    const double reused_before = metric("reused");
    // Each answer says Connection: close; a GET right after takes a pooled connection unchecked
    // (within liveness_check_after), so one wrongly pooled would show as reused.
    for (int i = 0; i < 3; ++i) {
        INFO("request ", i);
        auto res = conn.request("GET", "/plain/orders/" + std::to_string(i), {{"X-Test-Close", "1"}});
        CHECK(res.status == 201);
    }
    CHECK(metric("opened") == opened_before + 3);
    CHECK(metric("reused") == reused_before);
    // And an answer that keeps its connection is pooled and reused.
    auto kept = conn.request("GET", "/plain/orders/3");
    auto again = conn.request("GET", "/plain/orders/4");
    CHECK(kept.status == 201);
    CHECK(again.status == 201);
    CHECK(metric("opened") == opened_before + 4);
    CHECK(metric("reused") == reused_before + 1);
}

TEST_SUITE_END();
