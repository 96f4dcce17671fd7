// SPDX-License-Identifier: Apache-2.0
// Failure paths: TTLs, store failures, slow or stalled clients, oversized upstream answers.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;

TEST_SUITE_BEGIN("resilience");

TEST_CASE("a record expires after record_ttl and the key runs again")
{
    gateway_options options;
    options.record_ttl = "500ms";
    gateway_fixture f(options);
    const std::string key = unique_key("ttl");
    auto first = f.post("/api/orders", key, "{}");
    REQUIRE(first.status == 201);
    auto start = std::chrono::steady_clock::now();
    CHECK(f.post("/api/orders", key, "{}").header("idempotent-replayed") == "true");

    // Bounded wait for the expiry itself (the event is the passing of record_ttl).
    http_response later;
    auto deadline = start + 5s;
    do {
        std::this_thread::sleep_for(100ms);
        later = f.post("/api/orders", key, "{}");
    } while (later.header("idempotent-replayed") == "true" && std::chrono::steady_clock::now() < deadline);
    CHECK(later.status == 201);
    CHECK(later.header("idempotent-replayed") != "true");
    CHECK(std::chrono::steady_clock::now() - start >= 400ms);
    CHECK(f.executions() == 2);
}

TEST_CASE("a reservation expires after lock_ttl and a late writer cannot overwrite the new record")
{
    gateway_options options;
    options.lock_ttl = "300ms";
    gateway_fixture f(options);
    const std::string key = unique_key("lock");

    // The first call holds the lock far longer than lock_ttl.
    http_response slow;
    std::thread slow_client([&] {
        try {
            slow = f.post("/api/orders", key, "{}", {{"X-Test-Delay-Ms", "2500"}});
        } catch (const std::exception&) {
        }
    });
    REQUIRE(f.wait_for_executions(1));

    // While the lock lives: 409. After it expires a retry takes the key and runs.
    http_response retry;
    auto deadline = std::chrono::steady_clock::now() + 2000ms;
    do {
        retry = f.post("/api/orders", key, "{}");
        if (retry.status == 409)
            std::this_thread::sleep_for(50ms);
    } while (retry.status == 409 && std::chrono::steady_clock::now() < deadline);
    CHECK(retry.status == 201);
    CHECK(retry.header("x-upstream-execution") == "2");
    slow_client.join();

    // The first call finished after losing its lock: its completion must not replace the record.
    auto replay = f.post("/api/orders", key, "{}");
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.header("x-upstream-execution") == "2");
    CHECK(replay.body == retry.body);
    CHECK(f.executions() == 2);
}

TEST_CASE("store failure with on_failure reject answers 503 without calling the upstream")
{
    gateway_options options;
    options.on_failure = "reject";
    options.memory_max_entries = 1;
    options.breaks_store = true;
    gateway_fixture f(options);
    auto how = f.break_store();
    CAPTURE(how);
    auto before = f.executions();

    auto res = f.post("/api/orders", unique_key("nostore"), "{}");
    CHECK(is_problem(res, 503));
    CHECK(res.header("idempotency-status") == "unavailable");
    // An unreachable Redis: retry in 1 s; a full memory store: when its oldest record expires
    // (the filler's record_ttl of 24h, so the 60 s cap).
    CHECK(res.header("retry-after") == (f.store.persistent() ? "1" : "60"));
    CHECK(f.executions() == before);

    // Requests that never touch the store are unaffected.
    CHECK(f.post("/api/orders", "", "{}").status == 201);
    CHECK(f.executions() == before + 1);
}

TEST_CASE("store failure with on_failure pass_through forwards unprotected")
{
    gateway_options options;
    options.on_failure = "pass_through";
    options.memory_max_entries = 1;
    options.breaks_store = true;
    gateway_fixture f(options);
    auto how = f.break_store();
    CAPTURE(how);
    auto before = f.executions();

    const std::string key = unique_key("bypass");
    auto a = f.post("/api/orders", key, "{}");
    auto b = f.post("/api/orders", key, "{}");
    CHECK(a.status == 201);
    CHECK(b.status == 201);
    CHECK(b.header("idempotent-replayed") != "true");
    CHECK(a.header("idempotency-status") == "unavailable"); // forwarded unprotected
    CHECK(f.executions() == before + 2);
}

TEST_CASE("upstream answer announced above max_response_body is a 502; it ran, so its retry is refused")
{
    gateway_options options;
    options.limits = "  max_response_body: 4KiB\n";
    gateway_fixture f(options);
    const std::string key = unique_key("huge");
    auto huge = f.post("/api/orders", key, "{}", {{"X-Test-Body-Size", "20000"}});
    CHECK(huge.status == 502);
    CHECK(is_problem(huge, 502));

    auto retry = f.post("/api/orders", key, "{}", {{"X-Test-Body-Size", "100"}});
    CHECK(is_problem(retry, 422));
    CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/answer-not-replayable");
    CHECK(f.executions() == 1);
}

TEST_CASE("a client that stalls inside the header is cut off after header_read")
{
    gateway_options options;
    options.timeouts = "  header_read: 300ms\n";
    gateway_fixture f(options);
    http_connection conn(f.port(), io_timeout);
    auto start = std::chrono::steady_clock::now();
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: stall\r\n");
    CHECK(conn.closed_by_peer(3s));
    CHECK(std::chrono::steady_clock::now() - start >= 250ms);
    CHECK(f.executions() == 0);
}

TEST_CASE("a client that stalls inside the body is cut off and its key is not held")
{
    gateway_options options;
    options.timeouts = "  body_read: 300ms\n";
    gateway_fixture f(options);
    const std::string key = unique_key("stall-body");
    {
        http_connection conn(f.port(), io_timeout);
        conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                      "\r\nContent-Length: 10\r\n\r\n{}");
        CHECK(conn.closed_by_peer(3s));
    }
    CHECK(f.executions() == 0);
    auto ok = f.post("/api/orders", key, "0123456789");
    CHECK(ok.status == 201);
    CHECK(ok.header("idempotent-replayed") != "true");
}

TEST_CASE("an idle keep-alive connection is closed after timeouts.idle")
{
    gateway_options options;
    options.timeouts = "  idle: 300ms\n";
    gateway_fixture f(options);
    http_connection conn(f.port(), io_timeout);
    CHECK(conn.request("GET", "/api/orders/1").status == 201);
    auto start = std::chrono::steady_clock::now();
    CHECK(conn.closed_by_peer(3s));
    CHECK(std::chrono::steady_clock::now() - start >= 200ms);
}

TEST_CASE(
    "an upstream that drops the connection without answering gets 502 and is not sent the request twice")
{
    gateway_fixture f;
    // One client connection stays on one I/O thread: its GET leaves an idle upstream connection
    // in that thread's pool, and the POST goes out on it. That is the case where a proxy is
    // tempted to retry when the connection dies without an answer.
    http_connection conn(f.port(), io_timeout);
    REQUIRE(conn.request("GET", "/plain/warm").status == 201);
    auto before = f.executions();
    const std::string key = unique_key("abort");
    auto res = conn.request("POST", "/api/orders", {{"Idempotency-Key", key}, {"X-Test-Abort", "1"}}, "{}");
    CHECK(is_problem(res, 502));
    // RFC 9110 9.2.2: a proxy must not automatically retry a non-idempotent request; the
    // upstream may have run it (here it did).
    CHECK(f.executions() == before + 1);

    // The upstream may have run it: by default (on_unknown_outcome: hold) the key is held, and
    // the client's retry is refused rather than run again.
    auto retry = f.post("/api/orders", key, "{}");
    CHECK(is_problem(retry, 409));
    CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
    CHECK(f.executions() == before + 1);
}

TEST_CASE("a path no route matches gets a 404 problem and reaches no upstream")
{
    gateway_fixture f;
    auto res = f.post("/nowhere", unique_key("404"), "{}");
    CHECK(is_problem(res, 404));
    CHECK(f.executions() == 0);
}

TEST_SUITE_END();
