// SPDX-License-Identifier: Apache-2.0
// Every configuration key against a reload, as a table: each reloadable key is changed in the
// running gateway's file, SIGHUP applied, and the new value must show on the next request or
// connection; each restart-only key is changed too, and the log must name it while the running
// value stays. A row fails when a part of the gateway keeps reading the value it started with.
// docs/reference/configuration.md ("Configuration reference: what a reload changes") marks the
// same keys.
#include "h2_support.hpp"
#include "reload_support.hpp"

#include <arpa/inet.h>
#include <chrono>
#include <csignal>
#include <doctest/doctest.h>
#include <functional>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

using headers_type = std::vector<std::pair<std::string, std::string>>;

// A TCP port whose SYNs go unanswered: it listens with a backlog of zero, never accepts, and
// two connections fill its queue, so the kernel drops every later SYN and a connect hangs
// (what an upstream behind a dead route looks like).
class blackhole {
public:
    blackhole()
    {
        fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
        REQUIRE(::listen(fd_, 0) == 0);
        socklen_t len = sizeof addr;
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
        port_ = ntohs(addr.sin_port);
        pollfd connecting[2];
        for (std::size_t i = 0; i < 2; ++i) {
            fillers_[i] = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
            ::connect(fillers_[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr);
            connecting[i] = {fillers_[i], POLLOUT, 0};
        }
        // The queue is full once a filler's handshake has completed into it (the other one's SYN
        // may already be dropped): wait for that, not for a guessed time.
        REQUIRE(::poll(connecting, 2, 5000) > 0);
    }
    ~blackhole()
    {
        for (int c : fillers_)
            ::close(c);
        ::close(fd_);
    }
    blackhole(const blackhole&) = delete;
    blackhole& operator=(const blackhole&) = delete;
    std::uint16_t port() const { return port_; }

private:
    int fd_ = -1;
    int fillers_[2] = {-1, -1};
    std::uint16_t port_ = 0;
};

// The running gateway's file with `edit` applied, reloaded by SIGHUP (the n-th reload of it).
void reload_with(gateway_fixture& f, const std::function<std::string(std::string)>& edit)
{
    const auto path = f.gateway->config_path();
    write_text(path, edit(read_text(path)));
    f.process().signal(SIGHUP);
    REQUIRE(logged(*f.gateway, "\"msg\":\"configuration reloaded\""));
}

std::function<std::string(std::string)> replacing(std::string from, std::string to)
{
    return [from, to](std::string text) { return replaced(std::move(text), from, to); };
}

std::string orders_address(gateway_fixture& f)
{
    return "address: \"127.0.0.1:" + std::to_string(f.upstream.port()) + "\"";
}

http_response plain_request(gateway_fixture& f, const headers_type& headers, const std::string& body = "{}")
{
    return gateway_request(f.port(), "POST", "/plain/x", headers, body);
}

std::size_t access_lines(gateway_fixture& f)
{
    return count_lines(*f.gateway, "\"msg\":\"access\"");
}

// One reloadable key: the gateway as started, the change, and what the next request shows.
struct reloadable_row {
    std::string key;
    std::function<void(gateway_options&)> start;
    std::function<std::string(gateway_fixture&, std::string)> edit;
    std::function<void(gateway_fixture&)> check;
};

// The server's HTTP/2 SETTINGS on a new prior-knowledge connection (empty: not HTTP/2).
boost::json::object h2_settings(gateway_fixture& f)
{
    auto out = h2_driver({"settings", std::to_string(f.port())});
    REQUIRE(out.size() == 1);
    return out[0].at("settings").as_object();
}

// http2.*: each applies to connections accepted after the reload (ALPN included: the TLS
// context is rebuilt with or without h2, see tls_test.cpp).
void add_http2_rows(std::vector<reloadable_row>& rows)
{
    auto cleartext = [](std::string more) {
        return [more](gateway_options& o) { o.top_level = "http2:\n  cleartext: true\n" + more; };
    };
    auto text_edit = [](std::string from, std::string to) {
        return [from, to](gateway_fixture&, std::string text) { return replaced(std::move(text), from, to); };
    };
    rows.push_back(
        {"http2.enabled", cleartext("  enabled: true\n"),
         text_edit("  cleartext: true\n  enabled: true\n", "  cleartext: false\n  enabled: false\n"),
         [](auto& f) { CHECK(h2_settings(f).empty()); }});
    rows.push_back({"http2.cleartext", [](auto& o) { o.top_level = "http2:\n  cleartext: false\n"; },
                    text_edit("cleartext: false", "cleartext: true"),
                    [](auto& f) { CHECK(h2_settings(f).contains("3")); }});
    struct setting {
        const char* key;
        const char* from;
        const char* to;
        const char* id; // RFC 9113 6.5.2
        std::int64_t value;
    };
    for (auto s : {setting{"max_concurrent_streams", "128", "7", "3", 7},
                   setting{"initial_window_size", "256KiB", "64KiB", "4", 65536},
                   setting{"max_frame_size", "16KiB", "32KiB", "5", 32768},
                   setting{"max_header_list_size", "32KiB", "8KiB", "6", 8192}}) {
        auto line = [&](const char* v) { return std::string("  ") + s.key + ": " + v + "\n"; };
        rows.push_back({std::string("http2.") + s.key, cleartext(line(s.from)),
                        text_edit(line(s.from), line(s.to)),
                        [s](auto& f) { CHECK(h2_settings(f).at(s.id).as_int64() == s.value); }});
    }
    rows.push_back({"http2.idle_timeout", cleartext("  idle_timeout: 60s\n"),
                    text_edit("idle_timeout: 60s", "idle_timeout: 1s"), [](auto& f) {
                        auto out = h2_driver({"idle", std::to_string(f.port())});
                        REQUIRE(out.size() == 1);
                        CHECK(out[0].at("goaway").as_string() == "goaway NO_ERROR");
                        CHECK(out[0].at("after_ms").as_int64() < 4000);
                    }});
}

int readyz_status(gateway_fixture& f, std::string& body)
{
    auto res = gateway_request(f.gateway->admin_port(), "GET", "/readyz");
    body = res.body;
    return res.status;
}

// store.refusal (reloadable although store is not) and readiness.store.
void add_store_health_rows(std::vector<reloadable_row>& rows)
{
    auto text_edit = [](std::string from, std::string to) {
        return [from, to](gateway_fixture&, std::string text) { return replaced(std::move(text), from, to); };
    };
    rows.push_back(
        {"store.refusal.errors", [](auto& o) { o.store_extra = "  refusal:\n    errors: 50\n"; },
         text_edit("errors: 50", "errors: 2"),
         [](auto& f) {
             if (!f.store.redis) {
                 MESSAGE("store.refusal: needs a Redis of its own (IDEMGATE_TEST_STORE=redis)");
                 return;
             }
             REQUIRE(f.store.redis->command({"ACL", "SETUSER", "default", "-evalsha", "-eval"}) == "+OK\r\n");
             for (int i = 0; i < 2; ++i)
                 CHECK(f.post("/api/orders", unique_key("reload-refusal"), "{}").status == 201);
             std::string body;
             CHECK(poll_until(3s, [&] { return readyz_status(f, body) == 503; }));
             CHECK(body.find("refusing writes") != std::string::npos);
         }});
    rows.push_back({"readiness.store",
                    [](auto& o) {
                        o.top_level = "readiness:\n  store: required\n";
                        o.memory_max_entries = 1;
                    },
                    text_edit("store: required", "store: ignore"),
                    [](auto& f) {
                        if (f.store.cluster) {
                            MESSAGE("readiness.store: the shared cluster is not broken for one row");
                            return;
                        }
                        auto how = f.break_store();
                        INFO(how);
                        CHECK(is_problem(f.post("/api/orders", unique_key("reload-readiness"), "{}"), 503));
                        std::string body;
                        CHECK(readyz_status(f, body) == 200);
                        // The condition is named all the same.
                        CHECK(poll_until(3s, [&] {
                            readyz_status(f, body);
                            return body.find("unavailable") != std::string::npos ||
                                   body.find("full") != std::string::npos;
                        }));
                    }});
}

std::vector<reloadable_row> reloadable_rows()
{
    auto text_edit = [](std::string from, std::string to) {
        return [from, to](gateway_fixture&, std::string text) { return replaced(std::move(text), from, to); };
    };
    std::vector<reloadable_row> rows;
    rows.push_back({"limits.max_request_body", [](auto& o) { o.limits = "  max_request_body: 1MiB\n"; },
                    text_edit("max_request_body: 1MiB", "max_request_body: 64B"),
                    [](auto& f) { CHECK(plain_request(f, {}, std::string(200, 'a')).status == 413); }});
    rows.push_back({"limits.max_response_body", [](auto& o) { o.limits = "  max_response_body: 1MiB\n"; },
                    text_edit("max_response_body: 1MiB", "max_response_body: 1KiB"),
                    [](auto& f) {
                        CHECK(plain_request(f, {{"X-Test-Body-Size", "4096"}}).status == 502);
                    }});
    rows.push_back({"limits.max_record_body", [](auto& o) { o.limits = "  max_record_body: 1MiB\n"; },
                    text_edit("max_record_body: 1MiB", "max_record_body: 1KiB"),
                    [](auto& f) {
                        const auto key = unique_key("reload-record-body");
                        const headers_type big{{"X-Test-Body-Size", "4096"}};
                        CHECK(f.post("/api/orders", key, "{}", big).body.size() == 4096);
                        auto retry = f.post("/api/orders", key, "{}", big);
                        CHECK(is_problem(retry, 422)); // passed on, not recorded: never run again
                        CHECK(f.executions() == 1);
                    }});
    rows.push_back({"limits.max_header_bytes", [](auto& o) { o.limits = "  max_header_bytes: 16KiB\n"; },
                    text_edit("max_header_bytes: 16KiB", "max_header_bytes: 2KiB"),
                    [](auto& f) {
                        CHECK(plain_request(f, {{"X-Pad", std::string(3000, 'a')}}).status == 431);
                    }});
    rows.push_back({"limits.max_response_header_bytes",
                    [](auto& o) { o.limits = "  max_response_header_bytes: 64KiB\n"; },
                    text_edit("max_response_header_bytes: 64KiB", "max_response_header_bytes: 4KiB"),
                    [](auto& f) {
                        const std::string key = unique_key("reload-head-limit");
                        auto first = f.post("/api/orders", key, "{}", {{"X-Test-Head-Bytes", "8000"}});
                        CHECK(is_problem(first, 502));
                        auto retry = f.post("/api/orders", key, "{}");
                        CHECK(is_problem(retry, 422)); // the answer began: it ran, never again
                        CHECK(f.executions() == 1);
                    }});
    rows.push_back({"limits.max_connections", [](auto& o) { o.limits = "  max_connections: 2\n"; },
                    text_edit("max_connections: 2", "max_connections: 4"),
                    [](auto& f) {
                        http_connection a(f.port(), io_timeout), b(f.port(), io_timeout),
                            c(f.port(), io_timeout);
                        CHECK(a.request("GET", "/plain/a").status == 201);
                        CHECK(b.request("GET", "/plain/b").status == 201);
                        int third = 0;
                        try {
                            third = c.request("GET", "/plain/c").status;
                        } catch (const std::exception&) {
                            third = -1; // refused: closed without an answer
                        }
                        CHECK(third == 201);
                    }});
    rows.push_back({"limits.max_waiting",
                    [](auto& o) {
                        o.idempotency_extra = "      on_in_flight: wait\n";
                        o.limits = "  max_waiting: 10\n";
                    },
                    text_edit("max_waiting: 10", "max_waiting: 0"),
                    [](auto& f) {
                        const auto key = unique_key("reload-waiting");
                        http_connection first(f.port(), io_timeout);
                        first.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " +
                                       key + "\r\nX-Test-Delay-Ms: 1500\r\nContent-Length: 2\r\n\r\n{}");
                        REQUIRE(f.wait_for_executions(1));
                        // No room for a waiting duplicate any more: refused at once instead of
                        // waiting for the first answer.
                        CHECK(f.post("/api/orders", key, "{}").status == 503);
                        CHECK(first.read_response().status == 201);
                    }});
    rows.push_back({"timeouts.header_read", [](auto& o) { o.timeouts = "  header_read: 10s\n"; },
                    text_edit("header_read: 10s", "header_read: 300ms"),
                    [](auto& f) {
                        http_connection c(f.port(), io_timeout);
                        c.send_raw("POST /plain/x HTTP/1.1\r\nHost: 127.0.0.1\r\n");
                        CHECK(c.closed_by_peer(3s));
                    }});
    rows.push_back({"timeouts.body_read", [](auto& o) { o.timeouts = "  body_read: 30s\n"; },
                    text_edit("body_read: 30s", "body_read: 300ms"),
                    [](auto& f) {
                        http_connection c(f.port(), io_timeout);
                        c.send_raw(
                            "POST /plain/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 10\r\n\r\n{}");
                        CHECK(c.closed_by_peer(3s));
                    }});
    rows.push_back({"timeouts.idle", [](auto& o) { o.timeouts = "  idle: 60s\n"; },
                    text_edit("idle: 60s", "idle: 300ms"),
                    [](auto& f) {
                        http_connection c(f.port(), io_timeout);
                        CHECK(c.request("GET", "/plain/x").status == 201);
                        CHECK(c.closed_by_peer(3s));
                    }});
    rows.push_back({"timeouts.client_write",
                    [](auto& o) {
                        o.timeouts = "  client_write: 30s\n";
                        o.limits = "  max_response_body: 64MiB\n";
                    },
                    text_edit("client_write: 30s", "client_write: 300ms"),
                    [](auto& f) {
                        // 32 MiB is more than both sockets' buffers hold: a client that reads
                        // nothing outlives a 300 ms write deadline, not a 30 s one. The gateway's
                        // access line names the failed write once it gave up (the event waited
                        // for, where a 30 s deadline would not give up within the wait).
                        constexpr std::size_t size = 32 * 1024 * 1024;
                        http_connection c(f.port(), 10s);
                        c.send_raw("GET /plain/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Test-Body-Size: " +
                                   std::to_string(size) + "\r\n\r\n");
                        CHECK(logged(*f.gateway, "\"client_write_error\""));
                        bool whole = false;
                        try {
                            whole = c.read_response().body.size() == size;
                        } catch (const std::exception&) {
                        }
                        CHECK_FALSE(whole);
                    }});
    auto hole = std::make_shared<blackhole>();
    rows.push_back({"timeouts.upstream_connect", [](auto& o) { o.timeouts = "  upstream_connect: 5s\n"; },
                    [hole](gateway_fixture& f, std::string text) {
                        text = replaced(std::move(text), "upstream_connect: 5s", "upstream_connect: 300ms");
                        return replaced(std::move(text), orders_address(f),
                                        "address: \"127.0.0.1:" + std::to_string(hole->port()) + "\"");
                    },
                    [](auto& f) {
                        auto start = std::chrono::steady_clock::now();
                        auto status = plain_request(f, {}).status;
                        CHECK((status == 502 || status == 504));
                        CHECK(std::chrono::steady_clock::now() - start < 3s);
                    }});
    rows.push_back({"timeouts.upstream_response", [](auto& o) { o.timeouts = "  upstream_response: 25s\n"; },
                    text_edit("upstream_response: 25s", "upstream_response: 300ms"),
                    [](auto& f) {
                        CHECK(plain_request(f, {{"X-Test-Delay-Ms", "2000"}}).status == 504);
                    }});
    rows.push_back({"routes[].timeouts", [](auto&) {},
                    [](gateway_fixture&, std::string text) {
                        // The global upstream_response stays 25s; /plain/ gets 300ms of its own.
                        return replaced(std::move(text),
                                        "  - path_prefix: \"/plain/\"\n    upstream: orders\n",
                                        "  - path_prefix: \"/plain/\"\n    upstream: orders\n"
                                        "    timeouts: { upstream_response: 300ms }\n");
                    },
                    [](auto& f) {
                        CHECK(plain_request(f, {{"X-Test-Delay-Ms", "2000"}}).status == 504);
                    }});
    rows.push_back({"timeouts.drain", [](auto& o) { o.timeouts = "  drain: 1s\n"; },
                    text_edit("drain: 1s", "drain: 8s"),
                    [](auto& f) {
                        // In flight when the drain begins, answered after 2.5 s: within 8 s.
                        http_connection c(f.port(), 10s);
                        c.send_raw("POST /plain/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Test-Delay-Ms: 2500\r\n"
                                   "Content-Length: 2\r\n\r\n{}");
                        REQUIRE(f.wait_for_executions(1));
                        f.process().signal(SIGTERM);
                        int status = 0;
                        try {
                            status = c.read_response().status;
                        } catch (const std::exception&) {
                            status = -1; // cut by the drain
                        }
                        CHECK(status == 201);
                    }});
    rows.push_back(
        {"request_id_header",
         [](auto& o) {
             o.store_extra = "  local_tier:\n    max_bytes: 1MiB\n    max_age: 60s\n    admit: complete\n";
         },
         [](gateway_fixture&, std::string text) { return "request_id_header: X-Trace-Ref\n" + text; },
         [](auto& f) {
             // The first answer and two replays from the local tier (one connection:
             // one gateway thread, whose tier holds the copy): each carries this
             // request's ID once, under the new name.
             const auto key = unique_key("reload-request-id");
             http_connection c(f.port(), io_timeout);
             for (int i = 0; i < 3; ++i) {
                 auto res = c.request("POST", "/api/orders",
                                      {{"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
                 INFO("answer " << i << ": " << res.raw.substr(0, res.raw.find("\r\n\r\n")));
                 CHECK(res.status == 201);
                 CHECK(res.headers.count("x-trace-ref") == 1);
                 CHECK(res.headers.count("x-request-id") == 0);
             }
             CHECK(metric(f.gateway->admin_port(), "idemgate_local_tier_lookups_total{result=\"hit\"}") == 2);
         }});
    rows.push_back(
        {"log_level", [](auto& o) { o.idempotency_extra = "      on_status:\n        \"201\": hold\n"; },
         [](gateway_fixture&, std::string text) { return "log_level: error\n" + text; },
         [](auto& f) {
             // A held key logs a warning, a failed upstream exchange an error: after the reload
             // only the error reaches the output, and both go through one queue in order.
             auto held = gateway_request(f.port(), "POST", "/api/orders",
                                         {{"Idempotency-Key", unique_key("reload-log-level")}}, "{}");
             CHECK(held.status == 201);
             auto failed = gateway_request(f.port(), "POST", "/down/orders",
                                           {{"Idempotency-Key", unique_key("reload-log-level")}}, "{}");
             CHECK(failed.status == 502);
             CHECK(logged(*f.gateway, "\"msg\":\"upstream request failed\""));
             CHECK(count_lines(*f.gateway, "the key is held") == 0);
         }});
    rows.push_back({"access_log", [](auto& o) { o.access_log = "access_log: true\n"; },
                    text_edit("access_log: true", "access_log: false"),
                    [](auto& f) {
                        auto before = access_lines(f);
                        CHECK(plain_request(f, {}).status == 201);
                        std::this_thread::sleep_for(600ms); // flush_interval is 100 ms
                        CHECK(access_lines(f) == before);
                    }});
    rows.push_back({"access_log.flush_interval",
                    [](auto& o) { o.access_log = "access_log:\n  enabled: true\n  flush_interval: 100ms\n"; },
                    text_edit("flush_interval: 100ms", "flush_interval: 3s"),
                    [](auto& f) {
                        auto before = access_lines(f);
                        CHECK(plain_request(f, {}).status == 201);
                        std::this_thread::sleep_for(1s);
                        CHECK(access_lines(f) == before); // still in the thread's batch
                        CHECK(logged(*f.gateway, "\"msg\":\"access\"", before + 1, 6s));
                    }});
    rows.push_back({"access_log.batch_bytes",
                    [](auto& o) {
                        o.access_log =
                            "access_log:\n  enabled: true\n  batch_bytes: 64KiB\n  flush_interval: 10s\n";
                    },
                    text_edit("batch_bytes: 64KiB", "batch_bytes: 16B"),
                    [](auto& f) {
                        // One line passes 16 bytes: handed over at once, not after 10 s.
                        auto before = access_lines(f);
                        CHECK(plain_request(f, {}).status == 201);
                        CHECK(logged(*f.gateway, "\"msg\":\"access\"", before + 1, 3s));
                    }});
    rows.push_back({"routes", [](auto&) {}, text_edit("path_prefix: \"/plain/\"", "path_prefix: \"/fresh/\""),
                    [](auto& f) {
                        CHECK(is_problem(plain_request(f, {}), 404));
                        CHECK(gateway_request(f.port(), "POST", "/fresh/x", {}, "{}").status == 201);
                    }});
    rows.push_back({"routes[].idempotency", [](auto&) {},
                    text_edit("methods: [POST, PATCH]", "methods: [PATCH]"),
                    [](auto& f) {
                        // POST is no longer guarded on /api/: the same key runs twice.
                        const auto key = unique_key("reload-methods");
                        CHECK(f.post("/api/orders", key, "{}").status == 201);
                        CHECK(f.post("/api/orders", key, "{}").header("idempotent-replayed") != "true");
                        CHECK(f.executions() == 2);
                    }});
    rows.push_back({"routes[].idempotency.on_status",
                    [](auto& o) { o.idempotency_extra = "      on_status:\n        \"418\": record\n"; },
                    text_edit("\"418\": record", "\"418\": release"),
                    [](auto& f) {
                        const auto key = unique_key("reload-on-status");
                        CHECK(f.post("/api/orders", key, "{}", {{"X-Test-Status", "418"}}).status == 418);
                        CHECK(f.post("/api/orders", key, "{}").status == 201); // released: it runs
                        CHECK(f.executions() == 2);
                    }});
    rows.push_back({"routes[].idempotency.status_header",
                    [](auto& o) { o.idempotency_extra = "      status_header: Idempotency-Status\n"; },
                    text_edit("status_header: Idempotency-Status", "status_header: X-Key-Fate"),
                    [](auto& f) {
                        auto res = f.post("/api/orders", unique_key("reload-status-header"), "{}");
                        CHECK(res.header("x-key-fate") == "executed");
                        CHECK_FALSE(res.has_header("idempotency-status"));
                    }});
    rows.push_back({"routes[].idempotency.replay_drop_headers",
                    [](auto& o) { o.idempotency_extra = "      replay_drop_headers: [Retry-After]\n"; },
                    text_edit("replay_drop_headers: [Retry-After]", "replay_drop_headers: [X-Order-Ref]"),
                    [](auto& f) {
                        const auto key = unique_key("reload-replay-drop");
                        const headers_type fields{{"X-Test-Header", "Retry-After: 5"},
                                                  {"X-Test-Header", "X-Order-Ref: A-1"}};
                        REQUIRE(f.post("/api/orders", key, "{}", fields).status == 201);
                        auto replay = f.post("/api/orders", key, "{}");
                        CHECK(replay.header("idempotent-replayed") == "true");
                        CHECK_FALSE(replay.has_header("x-order-ref"));
                        CHECK(replay.header("retry-after") == "5");
                    }});
    rows.push_back({"routes[].idempotency.tombstone_ttl",
                    [](auto& o) {
                        o.record_ttl = "1s";
                        o.idempotency_extra = "      tombstone_ttl: 0s\n";
                    },
                    text_edit("tombstone_ttl: 0s", "tombstone_ttl: 30s"),
                    [](auto& f) {
                        const auto key = unique_key("reload-tombstone");
                        REQUIRE(f.post("/api/orders", key, "{}").status == 201);
                        std::this_thread::sleep_for(1300ms); // past record_ttl
                        auto late = f.post("/api/orders", key, "{}");
                        CHECK(is_problem(late, 422));
                        CHECK(parse_object(late.body)["type"] ==
                              "/.well-known/idempotency/problems/record-expired");
                        CHECK(f.executions() == 1);
                    }});
    rows.push_back({"routes[].idempotency.attempt_header",
                    [](auto& o) { o.idempotency_extra = "      attempt_header: X-Attempt-A\n"; },
                    text_edit("attempt_header: X-Attempt-A", "attempt_header: X-Attempt-B"),
                    [](auto& f) {
                        auto echo =
                            parse_object(f.post("/api/orders", unique_key("reload-attempt"), "{}").body);
                        auto& seen = echo["headers"].as_object();
                        CHECK(seen["x-attempt-b"] == "1");
                        CHECK_FALSE(seen.contains("x-attempt-a"));
                    }});
    rows.push_back({"routes[].idempotency.reconcile",
                    [](auto& o) {
                        o.idempotency_extra =
                            "      on_status: { \"500\": hold }\n"
                            "      reconcile: { path: \"/__lookup/404/{key}\", after: 0s }\n";
                    },
                    text_edit("/__lookup/404/{key}", "/__lookup/200/{key}"),
                    [](auto& f) {
                        const auto key = unique_key("reload-reconcile");
                        REQUIRE(f.post("/api/orders", key, "{}", {{"X-Test-Status", "500"}}).status == 500);
                        auto deadline = std::chrono::steady_clock::now() + 5s;
                        auto res = f.post("/api/orders", key, "{}");
                        while (res.status == 409 && std::chrono::steady_clock::now() < deadline) {
                            std::this_thread::sleep_for(50ms);
                            res = f.post("/api/orders", key, "{}");
                        }
                        CHECK(res.status == 200); // found: the reloaded path was probed
                        CHECK(res.header("idempotency-status") == "reconciled");
                        CHECK(f.executions() == 1);
                    }});
    rows.push_back(
        {"routes[].idempotency.key_format",
         [](auto& o) { o.idempotency_extra = "      key_format: { min_length: 1 }\n"; },
         text_edit("key_format: { min_length: 1 }", "key_format: { min_length: 16, pattern: \"k-.*\" }"),
         [](auto& f) {
             auto res = f.post("/api/orders", "k-short", "{}");
             CHECK(is_problem(res, 400));
             CHECK(res.body.find("16 to 255 characters 0x20-0x7E matching the pattern k-.*") !=
                   std::string::npos);
             CHECK(f.post("/api/orders", unique_key("k-reload-format"), "{}").status == 201);
         }});
    rows.push_back({"routes[].idempotency.key_space",
                    [](auto& o) {
                        o.extra_routes =
                            "  - path_prefix: \"/spaced/\"\n    upstream: orders\n    idempotency:\n"
                            "      key_space: tenant\n";
                    },
                    text_edit("key_space: tenant", "key_space: route"),
                    [](auto& f) {
                        // The /spaced/ route has a key space of its own now: the key the /api/
                        // route used runs again there instead of being a mismatch.
                        const auto key = unique_key("reload-space");
                        CHECK(f.post("/api/orders", key, "{}").status == 201);
                        auto other = f.post("/spaced/orders", key, "{}");
                        CHECK(other.status == 201);
                        CHECK(other.header("idempotent-replayed") != "true");
                        CHECK(f.executions() == 2);
                    }});
    rows.push_back(
        {"routes[].idempotency.key_from, key_json_pointer",
         [](auto& o) {
             o.extra_routes = "  - path_prefix: \"/bodykey/\"\n    upstream: orders\n    idempotency:\n"
                              "      key_from: header\n";
         },
         text_edit("key_from: header", "key_from: json\n      key_json_pointer: /client_ref"),
         [](auto& f) {
             // The body's client_ref is the key now: the second request is a replay.
             const std::string body = R"({"client_ref":")" + unique_key("reload-body") + R"("})";
             headers_type json{{"Content-Type", "application/json"}};
             CHECK(gateway_request(f.port(), "POST", "/bodykey/x", json, body).status == 201);
             CHECK(
                 gateway_request(f.port(), "POST", "/bodykey/x", json, body).header("idempotent-replayed") ==
                 "true");
             CHECK(f.executions() == 1);
         }});
    rows.push_back(
        {"routes[].idempotency.key_json_pointers",
         [](auto& o) {
             o.extra_routes = "  - path_prefix: \"/bodykey/\"\n    upstream: orders\n    idempotency:\n"
                              "      key_from: json\n      key_json_pointers: [/a]\n";
         },
         text_edit("key_json_pointers: [/a]", "key_json_pointers: [/a, /b]"),
         [](auto& f) {
             // /b joins the key: the same /a with another /b is another key, not a mismatch.
             const auto a = unique_key("reload-pointers");
             headers_type json{{"Content-Type", "application/json"}};
             CHECK(gateway_request(f.port(), "POST", "/bodykey/x", json, R"({"a":")" + a + R"(","b":1})")
                       .status == 201);
             CHECK(gateway_request(f.port(), "POST", "/bodykey/x", json, R"({"a":")" + a + R"(","b":2})")
                       .status == 201);
             CHECK(f.executions() == 2);
         }});
    rows.push_back(
        {"routes[].idempotency.client_lookup_path",
         [](auto& o) { o.idempotency_extra = "      client_lookup_path: \"/api/keys/\"\n"; },
         text_edit("client_lookup_path: \"/api/keys/\"", "client_lookup_path: \"/api/lookup/\""),
         [](auto& f) {
             // The new path is answered by the gateway; the old one is an ordinary /api/ request.
             auto answered = gateway_request(f.port(), "GET", "/api/lookup/" + unique_key("reload-lookup"));
             CHECK(answered.status == 200);
             CHECK(parse_object(answered.body)["state"] == "absent");
             CHECK(f.executions() == 0);
             CHECK(gateway_request(f.port(), "GET", "/api/keys/k").header("x-upstream-execution") == "1");
         }});
    rows.push_back({"problems.base_uri", [](auto& o) { o.top_level = "problems:\n  base_uri: \"\"\n"; },
                    text_edit("base_uri: \"\"", "base_uri: \"https://docs.example.com/p/\""),
                    [](auto& f) {
                        auto refused = gateway_request(f.port(), "POST", "/strict/x", {}, "{}");
                        CHECK(parse_object(refused.body)["type"] ==
                              "https://docs.example.com/p/missing-idempotency-key");
                    }});
    rows.push_back({"upstreams", [](auto&) {},
                    [](gateway_fixture& f, std::string text) {
                        // The upstream the routes use now points where nothing listens.
                        return replaced(std::move(text), orders_address(f), "address: \"127.0.0.1:1\"");
                    },
                    [](auto& f) { CHECK(plain_request(f, {}).status == 502); }});
    rows.push_back(
        {"tenants", [](auto&) {},
         [](gateway_fixture&, std::string text) {
             return text + "tenants:\n  default:\n    new_keys_per_second: 0.001\n";
         },
         [](auto& f) {
             // A burst of one new key per tenant, then 429.
             headers_type tenant{{"X-Tenant-ID", "reload-tenant"}};
             CHECK(f.post("/tenant/x", unique_key("reload-tenant-1"), "{}", tenant).status == 201);
             CHECK(is_problem(f.post("/tenant/x", unique_key("reload-tenant-2"), "{}", tenant), 429));
         }});
    rows.push_back({"admin.shadow_window",
                    [](auto& o) {
                        o.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n  shadow_window: 1h\n";
                        o.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
                    },
                    text_edit("shadow_window: 1h", "shadow_window: 15m"),
                    [](auto& f) {
                        auto res = gateway_request(f.gateway->admin_port(), "GET", "/admin/v1/shadow",
                                                   {{"Authorization", "Bearer " + admin_token}});
                        CHECK(res.status == 200);
                        CHECK(parse_object(res.body)["window_seconds"] == 900);
                        // Reloadable inside the restart-only admin section: no restart asked for.
                        for (const auto& l : f.process().lines())
                            CHECK(l.find("needs a restart") == std::string::npos);
                    }});
    add_http2_rows(rows);
    add_store_health_rows(rows);
    return rows;
}

// One restart-only key: the change, and a check that the running value stayed.
struct restart_row {
    std::string key;
    std::function<std::string(std::string)> edit;
    std::function<void(gateway_fixture&)> still_running;
};

const std::string reload_keys_admin_token = "reload-keys-admin-token-0123456789";

std::vector<restart_row> restart_rows()
{
    auto serves = [](gateway_fixture& f) { CHECK(plain_request(f, {}).status == 201); };
    return {
        {"listen", replacing("listen: \"127.0.0.1:0\"", "listen: \"127.0.0.1:1\""), serves},
        {"admin_listen", replacing("admin_listen: \"127.0.0.1:0\"", "admin_listen: \"127.0.0.1:1\""),
         [](auto& f) { CHECK(gateway_request(f.gateway->admin_port(), "GET", "/healthz").status == 200); }},
        {"threads", replacing("threads: 2", "threads: 3"), serves},
        {"access_log.path",
         replacing("access_log: true\n", "access_log: { path: \"/nonexistent/idemgate/access.log\" }\n"),
         [](auto& f) {
             // The lines still go to stdout.
             auto res = gateway_request(f.port(), "POST", "/plain/x", {{"X-Request-Id", "reload-path"}});
             CHECK(res.status == 201);
             CHECK(poll_until(5s, [&] {
                 for (const auto& l : f.process().lines())
                     if (l.find("\"msg\":\"access\"") != std::string::npos &&
                         l.find("reload-path") != std::string::npos)
                         return true;
                 return false;
             }));
         }},
        {"store", replacing("on_failure: reject", "on_failure: pass_through"), serves},
        {"store",
         [](std::string text) {
             // store.redis.consistency and wait_timeout: restart-only like the rest of store.
             const std::string keys = "    consistency: async\n    wait_timeout: 20ms\n";
             if (text.find("  redis:\n") != std::string::npos)
                 return replaced(std::move(text), "  redis:\n", "  redis:\n" + keys);
             return replaced(std::move(text), "  on_failure: reject\n",
                             "  on_failure: reject\n  redis:\n" + keys);
         },
         serves},
        {"admin", replacing("token_env: IDEMGATE_TEST_ADMIN_TOKEN", "token_env: IDEMGATE_TEST_OTHER_TOKEN"),
         [](auto& f) {
             // The token the gateway started with still opens the admin API.
             auto res = gateway_request(f.gateway->admin_port(), "POST", "/admin/v1/reload",
                                        {{"Authorization", "Bearer " + reload_keys_admin_token}});
             CHECK(res.status == 200);
         }},
        {"tracing",
         [](std::string text) {
             return text +
                    "tracing:\n  otlp_endpoint: \"http://127.0.0.1:9/v1/traces\"\n  sample_ratio: 1.0\n";
         },
         [](auto& f) {
             // Still off: a traceparent passes unchanged and nothing is queued for export.
             const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
             auto res = gateway_request(f.port(), "POST", "/api/orders", {{"traceparent", tp}});
             CHECK(res.body.find(tp) != std::string::npos);
             CHECK(metric(f.gateway->admin_port(), "idemgate_trace_spans_total{result=\"dropped_export\"}") ==
                   0);
         }},
    };
}

} // namespace

TEST_SUITE_BEGIN("reload");

TEST_CASE("every reloadable key takes effect on the next request or connection")
{
    for (const auto& row : reloadable_rows()) {
        INFO("key: " << row.key);
        gateway_options options;
        row.start(options);
        gateway_fixture f(options);
        reload_with(f, [&](std::string text) { return row.edit(f, std::move(text)); });
        row.check(f);
    }
}

TEST_CASE("every restart-only key is named in the log and keeps its running value")
{
    for (const auto& row : restart_rows()) {
        INFO("key: " << row.key);
        gateway_options options;
        options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
        options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", reload_keys_admin_token);
        options.env.emplace_back("IDEMGATE_TEST_OTHER_TOKEN", "reload-keys-other-token-0123456789");
        gateway_fixture f(options);
        reload_with(f, row.edit);
        bool named = false;
        for (const auto& l : f.process().lines())
            named = named || (l.find("needs a restart") != std::string::npos &&
                              l.find("\"" + row.key + "\"") != std::string::npos);
        CHECK(named);
        row.still_running(f);
    }
}

TEST_SUITE_END();
