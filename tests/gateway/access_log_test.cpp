// SPDX-License-Identifier: Apache-2.0
// The batched access log: every line of a clean stop is written, and a sink
// slower than the traffic drops (and counts) lines instead of slowing requests down.
#include "gateway_fixture.hpp"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <doctest/doctest.h>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <signal.h>
#include <thread>

using namespace idemgate::test;

namespace {

// The access lines among `lines`, by request_id (each ID must appear once).
std::map<std::string, int> access_ids(const std::vector<std::string>& lines)
{
    std::map<std::string, int> ids;
    for (const auto& l : lines) {
        auto obj = parse_object(l);
        auto* msg = obj.if_contains("msg");
        auto* id = obj.if_contains("request_id");
        if (msg && *msg == "access" && id && id->is_string())
            ++ids[std::string(id->as_string())];
    }
    return ids;
}

// `unix_ms` as the access line's "time": ISO 8601, UTC, milliseconds.
std::string utc_time(std::int64_t unix_ms)
{
    const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
    std::tm parts{};
    ::gmtime_r(&t, &parts);
    char text[96];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900,
                  parts.tm_mon + 1, parts.tm_mday, parts.tm_hour, parts.tm_min, parts.tm_sec,
                  static_cast<int>(unix_ms % 1000));
    return text;
}

// Sends `count` requests over `connections` keep-alive connections, in turn; each gets its own
// X-Request-Id "<stem>-<i>". Returns how many were answered 201.
int send_requests(std::uint16_t port, const std::string& stem, int count, int connections)
{
    std::vector<std::unique_ptr<http_connection>> conns;
    for (int c = 0; c < connections; ++c)
        conns.push_back(std::make_unique<http_connection>(port, io_timeout));
    int ok = 0;
    for (int i = 0; i < count; ++i) {
        auto& conn = *conns[static_cast<std::size_t>(i % connections)];
        auto res = conn.request("POST", "/api/orders",
                                {{"Idempotency-Key", stem + "-key-" + std::to_string(i % 50)},
                                 {"X-Request-Id", stem + "-" + std::to_string(i)},
                                 {"Content-Type", "application/json"}},
                                "{}");
        ok += res.status == 201;
    }
    return ok;
}

} // namespace

TEST_SUITE_BEGIN("access log");

TEST_CASE("N requests give N access lines once the gateway has drained, each exactly once")
{
    gateway_fixture f;
    const int n = 600;
    const std::string stem = unique_key("drain-log");
    CHECK(send_requests(f.port(), stem, n, 4) == n);
    f.process().signal(SIGTERM);
    REQUIRE(f.process().wait_exit(15s) == 0);
    auto lines = f.process().lines();
    auto ids = access_ids(lines);
    int ours = 0;
    for (int i = 0; i < n; ++i) {
        auto it = ids.find(stem + "-" + std::to_string(i));
        if (it != ids.end() && it->second == 1)
            ++ours;
    }
    CHECK_MESSAGE(ours == n, "access lines found once: " << ours << " of " << n);
    // The access lines were handed over before the process said it stopped.
    std::size_t stopped_at = lines.size();
    std::size_t last_access = 0;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        if (lines[i].find("\"msg\":\"stopped\"") != std::string::npos)
            stopped_at = i;
        if (lines[i].find("\"msg\":\"access\"") != std::string::npos)
            last_access = i;
    }
    CHECK(last_access < stopped_at);
}

TEST_CASE("a stuck stdout drops access lines and counts them; requests are still answered")
{
    gateway_options options;
    // A small queue and small batches handed over early: once nobody reads the gateway's output,
    // the pipe (64 KiB) fills, the writer blocks in write(), and the queue fills behind it.
    options.access_log = "access_log:\n  enabled: true\n  queue_lines: 20\n  batch_bytes: 1KiB\n"
                         "  flush_interval: 10ms\n";
    gateway_fixture f(options);
    auto admin = f.gateway->admin_port();
    f.process().pause_output(true);
    const int n = 2000;
    const std::string stem = unique_key("stuck-log");
    // Each request has a 4 s socket timeout: a request thread blocked on the log would fail here.
    CHECK(send_requests(f.port(), stem, n, 4) == n);
    CHECK(metric(admin, "idemgate_access_log_dropped_total") > 0);
    // A failed upstream exchange also writes an error line (not an access line): it waits in the
    // writer's queue too, and the request thread answers at once.
    auto failed = gateway_request(
        f.port(), "POST", "/down/orders",
        {{"Idempotency-Key", unique_key("stuck-down")}, {"X-Request-Id", "down-" + stem}}, "{}");
    CHECK(failed.status == 502);
    CHECK(metric(admin, "idemgate_log_dropped_total") == 0);
    f.process().pause_output(false);

    // Every request is either logged or counted as dropped: wait (bounded) for the sum.
    auto logged = [&] {
        int count = 0;
        for (const auto& [id, times] : access_ids(f.process().lines()))
            if (id.rfind(stem + "-", 0) == 0 || id == "down-" + stem)
                count += times;
        return count;
    };
    auto deadline = std::chrono::steady_clock::now() + 10s;
    double dropped = 0;
    int written = 0;
    for (;;) {
        dropped = metric(admin, "idemgate_access_log_dropped_total");
        written = logged();
        if (written + static_cast<int>(dropped) >= n + 1 || std::chrono::steady_clock::now() > deadline)
            break;
        std::this_thread::sleep_for(20ms); // polling the gateway's own counter and output
    }
    // The n requests and the failed one.
    CHECK_MESSAGE(written + static_cast<int>(dropped) == n + 1,
                  "logged " << written << ", dropped " << dropped);
    CHECK(written > 0);
    f.process().signal(SIGTERM);
    REQUIRE(f.process().wait_exit(15s) == 0);
    CHECK(logged() == written); // nothing counted as dropped was written after all
    bool error_line = false;
    for (const auto& l : f.process().lines())
        error_line = error_line || (l.find("\"msg\":\"upstream request failed\"") != std::string::npos &&
                                    l.find("down-" + stem) != std::string::npos);
    CHECK_MESSAGE(error_line, "the error line written while stdout was stuck reached the output");
}

TEST_CASE("an access line explains its upstream exchange; a failed one also gets an error line")
{
    gateway_fixture f;
    auto ok = gateway_request(f.port(), "POST", "/api/orders",
                              {{"Idempotency-Key", unique_key("fields")},
                               {"X-Request-Id", "fields-ok"},
                               {"User-Agent", "orders-client/2.1"}},
                              "{\"item\":\"book\"}");
    REQUIRE(ok.status == 201);
    auto down = gateway_request(
        f.port(), "POST", "/down/orders",
        {{"Idempotency-Key", unique_key("fields-down")}, {"X-Request-Id", "fields-down"}}, "{}");
    REQUIRE(down.status == 502);
    // Without an ID of its own: the error line names the one the gateway made (and answered with).
    auto made = gateway_request(f.port(), "POST", "/down/orders",
                                {{"Idempotency-Key", unique_key("fields-made")}}, "{}");
    REQUIRE(made.status == 502);
    const auto made_id = made.header("x-request-id");
    REQUIRE(!made_id.empty());
    // HTTP/1.0, and a path no route has: route "none", no upstream.
    http_connection old(f.port(), io_timeout);
    old.send_raw("GET /no-route/x HTTP/1.0\r\nX-Request-Id: fields-none\r\n\r\n");
    CHECK(old.read_response().status == 404);
    f.process().signal(SIGTERM);
    REQUIRE(f.process().wait_exit(15s) == 0);
    std::optional<boost::json::object> ok_line, down_line, none_line, error_line, made_error_line;
    for (const auto& l : f.process().lines()) {
        auto obj = parse_object(l);
        auto* id = obj.if_contains("request_id");
        if (obj.if_contains("msg") && obj.at("msg") == "access" && id && *id == "fields-ok")
            ok_line = obj;
        if (obj.if_contains("msg") && obj.at("msg") == "access" && id && *id == "fields-down")
            down_line = obj;
        if (obj.if_contains("msg") && obj.at("msg") == "access" && id && *id == "fields-none")
            none_line = obj;
        if (obj.if_contains("msg") && obj.at("msg") == "upstream request failed" && id &&
            *id == "fields-down")
            error_line = obj;
        if (obj.if_contains("msg") && obj.at("msg") == "upstream request failed" && id &&
            *id == boost::json::string_view(made_id.data(), made_id.size()))
            made_error_line = obj;
    }
    CHECK_MESSAGE(made_error_line, "no error line names the request ID " << made_id);
    REQUIRE(ok_line);
    CHECK(ok_line->at("level") == "info");
    CHECK(ok_line->at("time") == boost::json::value(utc_time(ok_line->at("ts").as_int64())));
    CHECK(ok_line->at("protocol") == "HTTP/1.1");
    CHECK(ok_line->at("route") == "/api/");
    CHECK(ok_line->at("upstream") == "orders");
    CHECK(ok_line->at("upstream_address") == boost::json::value(f.upstream.address()));
    CHECK(ok_line->at("upstream_us").as_int64() > 0);
    CHECK(ok_line->at("upstream_us").as_int64() <= ok_line->at("latency_us").as_int64());
    // The same in milliseconds, a number (as on the error line): microseconds / 1000.
    REQUIRE(ok_line->at("upstream_ms").is_double());
    CHECK(std::llround(ok_line->at("upstream_ms").as_double() * 1000) ==
          ok_line->at("upstream_us").as_int64());
    CHECK(!ok_line->contains("error"));
    CHECK(ok_line->at("bytes_in").as_int64() == 15);
    CHECK(ok_line->at("bytes_out").as_int64() == static_cast<std::int64_t>(ok.body.size()));
    CHECK(ok_line->at("user_agent") == "orders-client/2.1");
    REQUIRE(down_line);
    CHECK(down_line->at("status").as_int64() == 502);
    CHECK(down_line->at("error") == "connect");
    CHECK(down_line->at("upstream_address").as_string().size() > 0); // the address it tried
    CHECK(down_line->at("route") == "/down/");
    CHECK(down_line->at("upstream") == "nowhere");
    REQUIRE(none_line);
    CHECK(none_line->at("protocol") == "HTTP/1.0");
    CHECK(none_line->at("route") == "none");
    CHECK(!none_line->contains("upstream"));
    // Every field of these lines is in the logs reference, as `name`.
    std::ifstream page(std::string(IDEMGATE_SOURCE_DIR) + "/docs/reference/logs.md");
    const std::string reference{std::istreambuf_iterator<char>(page), std::istreambuf_iterator<char>()};
    REQUIRE(!reference.empty());
    for (const auto* line : {&*ok_line, &*down_line, &*none_line})
        for (const auto& field : *line) {
            const auto name = "`" + std::string(field.key()) + "`";
            CHECK_MESSAGE(reference.find(name) != std::string::npos,
                          name << " is not in docs/reference/logs.md");
        }
    REQUIRE(error_line);
    CHECK(error_line->at("level") == "error");
    CHECK(error_line->at("error") == "connect");
    CHECK(error_line->at("request_sent") == false);
}

TEST_CASE("access_log: false writes no access line")
{
    gateway_options options;
    options.access_log = "access_log: false\n";
    gateway_fixture f(options);
    const std::string stem = unique_key("no-log");
    CHECK(send_requests(f.port(), stem, 20, 1) == 20);
    f.process().signal(SIGTERM);
    REQUIRE(f.process().wait_exit(15s) == 0);
    CHECK(access_ids(f.process().lines()).empty());
}

TEST_SUITE_END();
