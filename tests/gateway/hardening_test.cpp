// SPDX-License-Identifier: Apache-2.0
// Hardening, each defect found as the behaviour that must hold now: 408 delivered, header limit
// whatever its shape, one upstream deadline, Connection cannot strip the scope, method case,
// UTF-8 access log, SIGHUP survives, Connection: close during the drain, trailers dropped.
#include "gateway_fixture.hpp"
#include "idemgate/test/raw_server.hpp"

#include <atomic>
#include <cstdlib>
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/socket.h>
#include <thread>

using namespace idemgate::test;

namespace {

// True when `s` is well-formed UTF-8 (RFC 3629: no overlongs, no surrogates, <= U+10FFFF).
bool is_valid_utf8(const std::string& s)
{
    std::size_t i = 0;
    while (i < s.size()) {
        auto c = static_cast<unsigned char>(s[i]);
        std::size_t n = 0;
        std::uint32_t cp = 0;
        if (c < 0x80) {
            ++i;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        for (std::size_t k = 1; k <= n; ++k) {
            if (i + k >= s.size())
                return false;
            auto cc = static_cast<unsigned char>(s[i + k]);
            if ((cc & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (cc & 0x3F);
        }
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += n + 1;
    }
    return true;
}

// A deliberately slow HTTP/1.1 upstream on a raw socket: a tiny receive buffer, a pause before
// it reads the request body, then a pause before it answers. The gateway's write of a large
// body blocks during the first pause, so the exchange takes read_pause + answer_pause.
class slow_upstream {
public:
    slow_upstream(milliseconds read_pause, milliseconds answer_pause)
        : read_pause_(read_pause), answer_pause_(answer_pause)
    {
    }
    std::uint16_t port() const { return server_.port(); }
    void expect_bytes(std::size_t n) { expected_bytes_ = n; }
    // Whether it has sent its answer.
    bool answered() const { return answered_; }

private:
    void serve(int fd)
    {
        timeval tv{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        std::this_thread::sleep_for(read_pause_);
        char buf[65536];
        std::size_t total = 0;
        for (;;) {
            auto n = ::recv(fd, buf, sizeof buf, 0);
            if (n <= 0)
                break;
            total += static_cast<std::size_t>(n);
            if (total >= expected_bytes_.load())
                break;
        }
        std::this_thread::sleep_for(answer_pause_);
        static constexpr char answer[] = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
        ::send(fd, answer, sizeof answer - 1, MSG_NOSIGNAL);
        answered_ = true;
    }

    const milliseconds read_pause_;
    const milliseconds answer_pause_;
    std::atomic<std::size_t> expected_bytes_{1};
    std::atomic<bool> answered_{false};
    // Last: its threads stop before the members they use are gone.
    raw_server server_{"slow upstream", 4, [this](int fd, int) { serve(fd); }, 4096};
};

std::string slow_upstream_yaml(std::uint16_t upstream_port)
{
    std::string y;
    y += "listen: \"127.0.0.1:0\"\nadmin_listen: \"127.0.0.1:0\"\nthreads: 1\n";
    y += "store:\n  type: memory\n";
    y += "upstreams:\n  slow: { address: \"127.0.0.1:" + std::to_string(upstream_port) + "\" }\n";
    y += "routes:\n  - path_prefix: \"/\"\n    upstream: slow\n    idempotency:\n      methods: [POST]\n";
    y += "      lock_ttl: 60s\n";
    y += "limits:\n  max_request_body: 8MiB\n";
    y += "timeouts:\n  upstream_response: 1s\n";
    return y;
}

} // namespace

TEST_SUITE_BEGIN("hardening");

TEST_CASE("a header that stalls gets a 408 problem before the connection closes")
{
    gateway_options options;
    options.timeouts = "  header_read: 300ms\n";
    gateway_fixture f(options);
    http_connection conn(f.port(), io_timeout);
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: stall\r\n");
    auto res = conn.read_response();
    CHECK(is_problem(res, 408));
    CHECK(res.header("connection") == "close");
    CHECK(conn.closed_by_peer(3s));
    CHECK(f.executions() == 0);
    auto line = f.process().wait_for_line(
        [](const std::string& l) {
            return l.find("\"msg\":\"access\"") != std::string::npos && l.find("408") != std::string::npos;
        },
        3s);
    REQUIRE(line);
    CHECK(parse_object(*line)["status"] == 408);
}

TEST_CASE("a body that stalls gets a 408 problem and its key is not held")
{
    gateway_options options;
    options.timeouts = "  body_read: 300ms\n";
    gateway_fixture f(options);
    const std::string key = unique_key("stall-body-408");
    http_connection conn(f.port(), io_timeout);
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                  "\r\nContent-Length: 10\r\n\r\n{}");
    auto res = conn.read_response();
    CHECK(is_problem(res, 408));
    CHECK(conn.closed_by_peer(3s));
    auto ok = f.post("/api/orders", key, "0123456789");
    CHECK(ok.status == 201);
    CHECK(ok.header("idempotent-replayed") != "true");
}

TEST_CASE("a 408 the client never reads is not logged as sent")
{
    gateway_options options;
    options.timeouts = "  header_read: 200ms\n";
    gateway_fixture f(options);
    {
        http_connection conn(f.port(), io_timeout);
        conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        conn.close(); // gone before the deadline: the 408 cannot reach anyone
    }
    // Whatever the gateway logs for this connection, it never claims a 408 reached the client.
    http_connection probe(f.port(), io_timeout);
    probe.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    auto res = probe.read_response();
    CHECK(res.status == 408);
    auto lines = f.process().lines();
    int sent_408 = 0;
    for (const auto& l : lines) {
        auto obj = parse_object(l);
        if (obj.if_contains("msg") && obj["msg"] == "access" && obj["status"] == 408)
            ++sent_408;
    }
    CHECK(sent_408 <= 1);
}

TEST_CASE("the header limit holds for many small fields sent in one write")
{
    gateway_options options;
    options.limits = "  max_header_bytes: 16KiB\n";
    gateway_fixture f(options);
    std::string request =
        "POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + unique_key("many") + "\r\n";
    for (int i = 0; request.size() < 32000; ++i)
        request += "X-F" + std::to_string(i) + ": " + std::string(90, 'v') + "\r\n";
    request += "Content-Length: 2\r\n\r\n{}";
    http_connection conn(f.port(), io_timeout);
    conn.send_raw(request);
    auto res = conn.read_response();
    CHECK(is_problem(res, 431));
    CHECK(f.executions() == 0);

    // Just under the limit passes.
    std::string fits = "POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; fits.size() < 15000; ++i)
        fits += "X-F" + std::to_string(i) + ": " + std::string(90, 'v') + "\r\n";
    fits += "Content-Length: 2\r\n\r\n{}";
    http_connection ok(f.port(), io_timeout);
    ok.send_raw(fits);
    CHECK(ok.read_response().status == 201);
}

TEST_CASE("upstream_response bounds writing the request and reading the answer together")
{
    // Each pause fits in upstream_response (1 s), the two together do not: one deadline for the
    // whole exchange answers 504 before the upstream answers, a deadline per phase would wait for
    // its 201. The margin is wide enough for a loaded machine's late timers.
    constexpr auto read_pause = 900ms;
    constexpr auto answer_pause = 900ms;
    slow_upstream upstream(read_pause, answer_pause);
    const std::size_t body_size = 4 * 1024 * 1024;
    upstream.expect_bytes(body_size);
    gateway_process gateway(slow_upstream_yaml(upstream.port()));
    auto start = std::chrono::steady_clock::now();
    auto res = http_request(gateway.port(), "POST", "/orders", {{"Idempotency-Key", unique_key("slow")}},
                            std::string(body_size, 'b'), 10s);
    auto took = std::chrono::steady_clock::now() - start;
    CHECK(is_problem(res, 504));
    CHECK_FALSE(upstream.answered());
    // One deadline of 1 s for the whole exchange (plus scheduling slack), not 1 s per phase.
    CHECK(took < read_pause + answer_pause);
}

TEST_CASE("--check warns when a lock_ttl is not above the upstream deadlines")
{
    temp_dir dir;
    std::string y = slow_upstream_yaml(9);
    y.replace(y.find("lock_ttl: 60s"), 13, "lock_ttl: 2s");
    auto path = dir.write_file("risky.yaml", y);
    child_process proc(gateway_bin(), {"--config", path, "--check"});
    CHECK(proc.wait_exit(10s) == 0);
    std::string out;
    for (auto& l : proc.lines())
        out += l + "\n";
    CHECK(out.find("warning: routes[0].idempotency.lock_ttl") != std::string::npos);
}

TEST_CASE("a Connection header naming a scope header or Host is refused")
{
    gateway_fixture f;
    for (std::string named :
         {"Idempotency-Key", "X-Tenant-ID", "x-tenant-id", "Host", "Keep-Alive, Idempotency-Key"}) {
        CAPTURE(named);
        http_connection conn(f.port(), io_timeout);
        auto res = conn.request(
            "POST", "/tenant/orders",
            {{"Idempotency-Key", unique_key("conn")}, {"X-Tenant-ID", "acme"}, {"Connection", named}}, "{}");
        CHECK(is_problem(res, 400));
        CHECK(conn.closed_by_peer(3s));
    }
    CHECK(f.executions() == 0);
    // Naming an ordinary header is still fine.
    auto ok = f.post("/tenant/orders", unique_key("conn-ok"), "{}",
                     {{"X-Tenant-ID", "acme"}, {"Connection", "X-Other"}});
    CHECK(ok.status == 201);
}

TEST_CASE("a non-canonical spelling of a standard method is refused, never forwarded unguarded")
{
    gateway_fixture f;
    const std::string key = unique_key("lower");
    for (std::string method : {"post", "Post", "pOST", "get"}) {
        CAPTURE(method);
        http_connection conn(f.port(), io_timeout);
        conn.send_raw(method + " /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                      "\r\nContent-Length: 2\r\n\r\n{}");
        auto res = conn.read_response();
        CHECK(is_problem(res, 400));
        CHECK(conn.closed_by_peer(3s));
    }
    CHECK(f.executions() == 0);
    // An extension method in upper case is not a spelling of a standard one: passed through.
    http_connection conn(f.port(), io_timeout);
    CHECK(conn.request("PURGE", "/api/orders").status == 201);
}

TEST_CASE("the access log is valid UTF-8 JSON whatever bytes the target holds")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    std::string target = "/api/orders/\xff\xfe\x80\xc3(";
    conn.send_raw("GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    // Raw bytes outside visible ASCII are refused (RFC 9112 3); the refusal's line is still JSON.
    auto res = conn.read_response();
    CHECK(is_problem(res, 400));
    auto line = f.process().wait_for_line(
        [](const std::string& l) {
            return l.find("\"msg\":\"access\"") != std::string::npos &&
                   l.find("visible ASCII") != std::string::npos;
        },
        5s);
    REQUIRE(line);
    CHECK(is_valid_utf8(*line));
    auto obj = parse_object(*line);
    CHECK(obj["outcome"] == "rejected");
    CHECK(obj["status"] == 400);

    // Quotes and backslashes (visible ASCII, so a valid key) are escaped, not cut or doubled.
    const std::string key = unique_key("quote\"back\\slash");
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    auto keyed = f.process().wait_for_line(
        [&](const std::string& l) {
            return l.find("\"msg\":\"access\"") != std::string::npos && l.find("back") != std::string::npos;
        },
        5s);
    REQUIRE(keyed);
    auto keyed_obj = parse_object(*keyed);
    REQUIRE(keyed_obj.if_contains("key"));
    CHECK(std::string(keyed_obj["key"].as_string()) == key);
}

TEST_CASE("SIGHUP does not stop the gateway")
{
    gateway_fixture f;
    f.process().signal(SIGHUP);
    REQUIRE(f.process().wait_for_line(
        [](const std::string& l) { return l.find("SIGHUP") != std::string::npos; }, 5s));
    CHECK(f.process().running());
    CHECK(f.post("/api/orders", unique_key("hup"), "{}").status == 201);
}

TEST_CASE("the request in flight when SIGTERM arrives is answered with Connection: close")
{
    gateway_fixture f;
    http_connection conn(f.port(), io_timeout);
    conn.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " +
                  unique_key("drain-close") + "\r\nX-Test-Delay-Ms: 500\r\nContent-Length: 2\r\n\r\n{}");
    REQUIRE(f.wait_for_executions(1));
    f.process().signal(SIGTERM);
    auto res = conn.read_response();
    CHECK(res.status == 201);
    CHECK(res.header("connection") == "close");
    CHECK(conn.closed_by_peer(3s));
    CHECK(f.process().wait_exit(10s) == 0);
}

TEST_CASE("upstream trailer fields are neither passed to the client nor recorded")
{
    gateway_fixture f;
    const std::string key = unique_key("trailer");
    auto first = f.post("/api/orders", key, "{}", {{"X-Test-Trailer", "1"}});
    CHECK(first.status == 201);
    CHECK_FALSE(first.has_header("x-trailer-secret"));
    CHECK_FALSE(first.has_header("trailer"));
    auto replay = f.post("/api/orders", key, "{}", {{"X-Test-Trailer", "1"}});
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK_FALSE(replay.has_header("x-trailer-secret"));
    CHECK(replay.body == first.body);
    CHECK(f.executions() == 1);
}

// Memory-store metrics only.
TEST_CASE("a full memory store shows in /metrics: entries and refused keys" * needs_store("memory"))
{
    gateway_options options;
    options.memory_max_entries = 2;
    gateway_fixture f(options);
    CHECK(f.post("/api/orders", unique_key("full-a"), "{}").status == 201);
    CHECK(f.post("/api/orders", unique_key("full-b"), "{}").status == 201);
    CHECK(is_problem(f.post("/api/orders", unique_key("full-c"), "{}"), 503));
    auto metrics = http_request(f.gateway->admin_port(), "GET", "/metrics");
    CHECK(metrics.body.find("idemgate_memory_store_entries 2") != std::string::npos);
    CHECK(metrics.body.find("idemgate_memory_store_refused_total 1") != std::string::npos);
}

TEST_SUITE_END();
