// SPDX-License-Identifier: Apache-2.0
// The promise as one table: every method a route can guard, under every way the test upstream can
// die or answer unreadably, behind one address and behind a two-member fleet, over the store of
// the run. Each key runs upstream at most once, its retry never runs it again, and the client is
// told (Idempotency-Status) which outcome its key got. Real gateway, real test upstreams.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <idemgate/test/gzip.hpp>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

// What the gateway made of the first attempt, as its client sees it.
enum class expect_first {
    held,        // no answer came (or none that began): the key is held; a retry gets 409 outcome-unknown
    status_only, // the answer began (its status line arrived) and could not be read: a status-only
                 // record; a retry gets 422 answer-not-replayable
};

struct fault {
    const char* name;
    std::vector<std::pair<std::string, std::string>> warm_headers; // on the requests that warm the pool
    std::vector<std::pair<std::string, std::string>> headers;      // on the guarded request
    expect_first expected;
};

const std::vector<fault>& faults()
{
    static const std::vector<fault> all{
        {"closes before reading the request", {{"X-Test-Drop-Next", "1"}}, {}, expect_first::held},
        {"closes after reading the request", {}, {{"X-Test-Drop", "1"}}, expect_first::held},
        {"closes after running it, without an answer", {}, {{"X-Test-Abort", "1"}}, expect_first::held},
        {"closes inside the status line", {}, {{"X-Test-Cut-Head", "10"}}, expect_first::held},
        {"closes inside the head, after the status line",
         {},
         {{"X-Test-Cut-Head", "40"}},
         expect_first::status_only},
        {"closes inside the body", {}, {{"X-Test-Break-After", "5"}}, expect_first::status_only},
        {"answers a head over the limit", {}, {{"X-Test-Head-Bytes", "70000"}}, expect_first::status_only},
        {"answers with two Content-Length values",
         {},
         {{"X-Test-Bad-Framing", "1"}},
         expect_first::status_only},
        {"answers with bare LF line ends", {}, {{"X-Test-Bare-LF", "1"}}, expect_first::status_only},
    };
    return all;
}

const char* const guarded_methods[] = {"POST", "PUT", "PATCH", "DELETE", "GET"};

struct promise_gateway {
    explicit promise_gateway(std::size_t members) : store(make_store())
    {
        std::string list;
        for (std::size_t i = 0; i < members; ++i) {
            upstreams.push_back(std::make_unique<test_upstream_process>(
                std::vector<std::string>{"--name", std::string(1, static_cast<char>('a' + i))}));
            list += (list.empty() ? "\"" : ", \"") + upstreams.back()->address() + "\"";
        }
        std::string y;
        y += "listen: \"${LISTEN}\"\nadmin_listen: \"${ADMIN}\"\nthreads: 1\naccess_log: false\n";
        y += store.yaml;
        y += "upstreams:\n  orders:\n    addresses: [" + list + "]\n";
        // The default on_unknown_outcome is under test: the route does not set it.
        y += "routes:\n"
             "  - path_prefix: \"/guarded/\"\n    upstream: orders\n    idempotency:\n"
             "      methods: [POST, PUT, PATCH, DELETE, GET]\n"
             "  - path_prefix: \"/plain/\"\n    upstream: orders\n";
        // A bare-LF answer on a connection the upstream keeps open must be refused at once, not
        // after upstream_response: a long one makes the difference show.
        y += "timeouts:\n  upstream_connect: 1s\n  upstream_response: 20s\n";
        gateway = std::make_unique<gateway_process>(y);
        wait_until_ready(*gateway);
    }

    // How many times the members ran requests under `key` (their /__keys lists).
    long executions_of(const std::string& key)
    {
        long n = 0;
        for (const auto& u : upstreams) {
            auto res = http_request(u->port(), "GET", "/__keys", {}, {}, io_timeout);
            auto keys = parse_object(res.body);
            if (auto* list = keys.if_contains(key))
                n += static_cast<long>(list->as_array().size());
        }
        return n;
    }

    store_under_test store;
    std::vector<std::unique_ptr<test_upstream_process>> upstreams;
    std::unique_ptr<gateway_process> gateway;
};

void run_table(promise_gateway& g)
{
    for (const auto& f : faults()) {
        for (const char* method : guarded_methods) {
            const std::string fault_name = f.name, method_name = method;
            CAPTURE(fault_name);
            CAPTURE(method_name);
            const std::string key = unique_key(std::string("promise-") + method);
            // One client connection stays on the gateway's one I/O thread: the requests before
            // leave idle connections to every member in its pool, so the guarded request goes out
            // on a reused one, where a proxy is tempted to send it again when it dies.
            http_connection conn(g.gateway->port(), io_timeout);
            for (std::size_t i = 0; i < g.upstreams.size(); ++i)
                REQUIRE(conn.request("GET", "/plain/warm", f.warm_headers).status == 201);
            std::vector<std::pair<std::string, std::string>> headers{{"Idempotency-Key", key}};
            headers.insert(headers.end(), f.headers.begin(), f.headers.end());
            const std::string body = std::string(method) == "GET" ? std::string() : std::string("{\"n\":1}");
            auto started = std::chrono::steady_clock::now();
            auto first = conn.request(method, "/guarded/orders", headers, body);
            CHECK(std::chrono::steady_clock::now() - started < 10s); // not the 20 s upstream_response
            CHECK(is_problem(first, 502));
            CHECK(g.executions_of(key) <= 1);

            // The client's retry, without the fault: it must not run again.
            auto retry = gateway_request(g.gateway->port(), method, "/guarded/orders",
                                         {{"Idempotency-Key", key}}, body);
            CHECK(g.executions_of(key) <= 1);
            if (f.expected == expect_first::held) {
                CHECK(first.header("idempotency-status") == "held");
                CHECK(is_problem(retry, 409));
                CHECK(parse_object(retry.body)["type"] ==
                      "/.well-known/idempotency/problems/outcome-unknown");
                CHECK(retry.header("idempotency-status") == "held");
            } else {
                CHECK(first.header("idempotency-status") == "executed");
                CHECK(g.executions_of(key) == 1);
                CHECK(is_problem(retry, 422));
                CHECK(parse_object(retry.body)["type"] ==
                      "/.well-known/idempotency/problems/answer-not-replayable");
                CHECK(retry.header("idempotency-status") == "not-replayable");
            }
        }
    }
}

} // namespace

TEST_SUITE_BEGIN("at-most-once");

TEST_CASE("every guarded method under every upstream fault runs at most once: one address")
{
    promise_gateway g(1);
    run_table(g);
}

TEST_CASE("every guarded method under every upstream fault runs at most once: a two-member fleet")
{
    promise_gateway g(2);
    run_table(g);
}

TEST_CASE("a method the route does not guard keeps RFC 9110's one resend of an idempotent request")
{
    // The control of the table above: the same fault on an unguarded PUT is sent again on a fresh
    // connection (and dies again), so the table's reused connections are real.
    promise_gateway g(1);
    http_connection conn(g.gateway->port(), io_timeout);
    REQUIRE(conn.request("GET", "/plain/warm").status == 201);
    const std::string key = unique_key("unguarded-put");
    auto res = conn.request("PUT", "/plain/orders", {{"Idempotency-Key", key}, {"X-Test-Abort", "1"}}, "{}");
    CHECK(is_problem(res, 502));
    CHECK(g.executions_of(key) == 2);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("promise-cases");

TEST_CASE("a guarded HEAD is replayed with the first answer's Content-Length")
{
    gateway_options options;
    options.extra_routes = "  - path_prefix: \"/head/\"\n    upstream: orders\n    idempotency:\n"
                           "      methods: [HEAD]\n";
    gateway_fixture f(options);
    const std::string key = unique_key("head");
    http_connection conn(f.port(), io_timeout);
    auto first = conn.request("HEAD", "/head/orders/1", {{"Idempotency-Key", key}});
    REQUIRE(first.status == 201);
    const auto length = first.header("content-length");
    REQUIRE(!length.empty());
    CHECK(length != "0"); // the test upstream announces the GET body's length
    auto replay = conn.request("HEAD", "/head/orders/1", {{"Idempotency-Key", key}});
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(replay.header("content-length") == length);
    CHECK(replay.body.empty());
    // No stray body bytes: the connection goes on.
    CHECK(conn.request("GET", "/plain/after").status == 201);
    CHECK(f.executions() == 2);
}

TEST_CASE("a new connection that sends nothing is closed after header_read, not idle")
{
    gateway_options options;
    options.timeouts = "  header_read: 300ms\n  idle: 30s\n";
    gateway_fixture f(options);
    http_connection conn(f.port(), io_timeout);
    auto start = std::chrono::steady_clock::now();
    CHECK(conn.closed_by_peer(3s));
    auto took = std::chrono::steady_clock::now() - start;
    CHECK(took >= 250ms);
    CHECK(took < 3s);
    // After a first request, the wait for the next one is idle's again.
    http_connection kept(f.port(), io_timeout);
    REQUIRE(kept.request("GET", "/plain/one").status == 201);
    CHECK_FALSE(kept.closed_by_peer(700ms));
}

TEST_CASE("CONNECT is answered 501 method-not-supported and never forwarded")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    conn.send_raw("CONNECT http://127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\nContent-Length: 0\r\n\r\n");
    auto res = conn.read_response();
    CHECK(is_problem(res, 501));
    CHECK(parse_object(res.body)["type"] == "/.well-known/idempotency/problems/method-not-supported");
    auto other =
        gateway_request(f.port(), "CONNECT", "127.0.0.1:80", {{"Idempotency-Key", unique_key("connect")}});
    CHECK((other.status == 501 || other.status == 400)); // authority-form: refused either way
    CHECK(f.executions() == 0);
}

TEST_CASE("a guarded request on a key_from: json route whose body has no key is told ignored")
{
    gateway_options options;
    options.extra_routes =
        "  - path_prefix: \"/bodykey/\"\n    upstream: orders\n    idempotency:\n"
        "      methods: [POST]\n      key_from: json\n      key_json_pointer: /client_ref\n";
    gateway_fixture f(options);
    auto res = gateway_request(f.port(), "POST", "/bodykey/orders", {}, R"({"item":"book"})");
    CHECK(res.status == 201);
    CHECK(res.header("idempotency-status") == "ignored");
    auto keyed = gateway_request(f.port(), "POST", "/bodykey/orders", {}, R"({"client_ref":"r-1"})");
    CHECK(keyed.header("idempotency-status") == "executed");
    // An unguarded method on that route carries no key and is told nothing.
    auto get = gateway_request(f.port(), "GET", "/bodykey/orders");
    CHECK(get.header("idempotency-status").empty());
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("promise-gzip");

TEST_CASE("fingerprint.decode: gzip: a retry whose gzip header differs is the same request; a bomb is 413")
{
    gateway_options options;
    options.extra_routes = "  - path_prefix: \"/gz/\"\n    upstream: orders\n    idempotency:\n"
                           "      methods: [POST]\n      fingerprint: { decode: gzip }\n";
    options.limits = "  max_request_body: 64KiB\n";
    gateway_fixture f(options);
    const std::string body = R"({"order":"o-1","amount":1250})";
    const auto at_one = idemgate::test::gzip_member(body, 1700000001);
    const auto at_two = idemgate::test::gzip_member(body, 1700000002, "retry.json");
    REQUIRE(at_one != at_two);
    const std::vector<std::pair<std::string, std::string>> gz{{"Content-Encoding", "gzip"}};

    const std::string key = unique_key("gzip");
    auto first = f.post("/gz/orders", key, at_one, gz);
    CHECK(first.status == 201);
    auto retry = f.post("/gz/orders", key, at_two, gz);
    CHECK(retry.header("idempotent-replayed") == "true");
    CHECK(retry.body == first.body);
    // Another decoded body under the key is still another request.
    auto other = f.post("/gz/orders", key, idemgate::test::gzip_member(R"({"order":"o-2"})", 1), gz);
    CHECK(is_problem(other, 409));
    CHECK(f.executions() == 1);

    // Without decode (the /api/ route), the encoded bytes are the fingerprint: a mismatch.
    const std::string raw_key = unique_key("gzip-raw");
    CHECK(f.post("/api/orders", raw_key, at_one, gz).status == 201);
    CHECK(is_problem(f.post("/api/orders", raw_key, at_two, gz), 409));

    // A body that decodes past max_request_body is refused before anything runs.
    const auto bomb = idemgate::test::gzip_member(std::string(4 * 1024 * 1024, '{'), 1, nullptr, 9);
    REQUIRE(bomb.size() < 64 * 1024);
    auto refused = f.post("/gz/orders", unique_key("gzip-bomb"), bomb, gz);
    CHECK(is_problem(refused, 413));
    CHECK(f.executions() == 2);
}

TEST_SUITE_END();
