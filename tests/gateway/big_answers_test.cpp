// SPDX-License-Identifier: Apache-2.0
// Answers too large to record (limits.max_record_body), tombstones (tombstone_ttl) and the
// attempt header: real idemgate, real test upstream, over each store.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>
#include <functional>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t nine_mib = 9 * 1024 * 1024;

// The first access line whose fields satisfy `pred`, or an empty object after 5 s.
boost::json::object access_line(gateway_fixture& f, const std::function<bool(boost::json::object&)>& pred)
{
    auto line = f.process().wait_for_line(
        [&](const std::string& l) {
            auto obj = parse_object(l);
            return obj.contains("outcome") && pred(obj);
        },
        5s);
    return line ? parse_object(*line) : boost::json::object{};
}

boost::json::object access_line_of(gateway_fixture& f, const std::string& key, int status)
{
    return access_line(f, [&](boost::json::object& o) {
        return o["key"] == boost::json::string_view(key) && o["status"] == status;
    });
}

// RFC 3339 in UTC as the gateway writes it: "2026-01-31T09:15:02.250Z".
bool is_rfc3339(const boost::json::value& v)
{
    if (!v.is_string())
        return false;
    auto s = v.as_string();
    return s.size() == 24 && s[4] == '-' && s[10] == 'T' && s[19] == '.' && s.ends_with("Z");
}

http_response big_post(std::uint16_t port, const std::string& key, bool chunked)
{
    std::vector<std::pair<std::string, std::string>> headers{{"Idempotency-Key", key},
                                                             {"Content-Type", "application/json"},
                                                             {"X-Test-Body-Size", std::to_string(nine_mib)}};
    if (chunked)
        headers.push_back({"X-Test-Chunked", "1"});
    return http_request(port, "POST", "/api/orders", headers, "{}", 20s);
}

} // namespace

TEST_SUITE_BEGIN("big_answers");

TEST_CASE("a 9 MiB answer runs once, reaches the client whole (Content-Length and chunked), and its retry "
          "is refused with 422 answer-not-replayable")
{
    gateway_fixture f;
    long executions = 0;
    for (bool chunked : {false, true}) {
        CAPTURE(chunked);
        const auto key = unique_key(chunked ? "big-chunked" : "big-length");
        auto first = big_post(f.port(), key, chunked);
        CHECK(first.status == 201);
        CHECK(first.body.size() == nine_mib);
        CHECK(first.body.find_first_not_of('x') == std::string::npos);
        if (chunked) {
            CHECK(first.header("transfer-encoding") == "chunked");
            CHECK_FALSE(first.has_header("content-length"));
        } else {
            CHECK(first.header("content-length") == std::to_string(nine_mib));
        }
        CHECK(first.header("idempotency-status") == "executed");
        CHECK(f.executions() == ++executions);
        auto location = first.header("location");
        CHECK_FALSE(location.empty());

        auto retry = big_post(f.port(), key, chunked);
        CAPTURE(retry.status);
        CAPTURE(retry.body);
        CHECK(is_problem(retry, 422));
        auto problem = parse_object(retry.body);
        CHECK(problem["type"] == "/.well-known/idempotency/problems/answer-not-replayable");
        CHECK(problem["original_status"] == 201);
        CHECK(is_rfc3339(problem["original_time"]));
        CHECK(problem["location"] == boost::json::string_view(location));
        CHECK(retry.header("link") == "<" + location + ">; rel=\"original\"");
        CHECK(retry.header("idempotency-status") == "not-replayable");
        CHECK(f.executions() == executions); // never executed again
        CHECK(access_line_of(f, key, 422)["outcome"] == "not_replayable");
        auto line = access_line_of(f, key, 201);
        CHECK(line["outcome"] == "executed");
    }
}

TEST_CASE("an answer announced over max_response_body is a 502 before any byte; the key completes and its "
          "retry is refused")
{
    gateway_options options;
    options.limits = "  max_record_body: 1MiB\n  max_response_body: 2MiB\n";
    gateway_fixture f(options);
    const auto key = unique_key("too-large");
    std::vector<std::pair<std::string, std::string>> headers{
        {"Idempotency-Key", key}, {"X-Test-Body-Size", std::to_string(3 * 1024 * 1024)}};
    auto first = http_request(f.port(), "POST", "/api/orders", headers, "{}", 10s);
    CHECK(is_problem(first, 502));
    CHECK(f.executions() == 1);
    auto retry = http_request(f.port(), "POST", "/api/orders", headers, "{}", 10s);
    CHECK(is_problem(retry, 422));
    CHECK(parse_object(retry.body)["original_status"] == 201);
    CHECK(f.executions() == 1);

    // Chunked, crossing max_response_body after the first bytes went out: the client's
    // connection is reset and the key completes all the same.
    const auto cut = unique_key("cut");
    std::vector<std::pair<std::string, std::string>> chunked{
        {"Idempotency-Key", cut},
        {"X-Test-Body-Size", std::to_string(3 * 1024 * 1024)},
        {"X-Test-Chunked", "1"}};
    CHECK_THROWS(http_request(f.port(), "POST", "/api/orders", chunked, "{}", 10s));
    CHECK(f.executions() == 2);
    auto after_cut = http_request(f.port(), "POST", "/api/orders", chunked, "{}", 10s);
    CHECK(is_problem(after_cut, 422));
    CHECK(f.executions() == 2);
}

TEST_CASE("a big answer that breaks off after the upstream began answering goes by its status: a status-only "
          "record, or held when on_status holds it")
{
    // The answer began (201 arrived): whatever on_unknown_outcome says, the status decides.
    for (bool hold : {false, true}) {
        CAPTURE(hold);
        gateway_options options;
        options.limits = "  max_record_body: 64KiB\n";
        options.idempotency_extra = "      on_unknown_outcome: release\n";
        if (hold)
            options.idempotency_extra += "      on_status: { \"201\": hold }\n";
        gateway_fixture f(options);
        const auto key = unique_key("broken");
        std::vector<std::pair<std::string, std::string>> headers{
            {"Idempotency-Key", key},
            {"X-Test-Body-Size", std::to_string(1024 * 1024)},
            {"X-Test-Break-After", std::to_string(512 * 1024)}};
        CHECK_THROWS(http_request(f.port(), "POST", "/api/orders", headers, "{}", 10s)); // reset, never whole
        CHECK(f.executions() == 1);
        auto retry = http_request(f.port(), "POST", "/api/orders", {{"Idempotency-Key", key}}, "{}", 10s);
        if (hold) {
            CHECK(is_problem(retry, 409));
            CHECK(parse_object(retry.body)["type"] == "/.well-known/idempotency/problems/outcome-unknown");
            CHECK(f.executions() == 1);
        } else {
            CHECK(is_problem(retry, 422));
            CHECK(parse_object(retry.body)["type"] ==
                  "/.well-known/idempotency/problems/answer-not-replayable");
            CHECK(f.executions() == 1);
        }
    }
}

TEST_CASE("the key stays in flight past lock_ttl while a big answer is passed on to a slow client")
{
    gateway_options options;
    // 2 s: the keeper extends it every 667 ms, and a loaded CI machine must not delay one renewal
    // past the lease (with 1 s, a 2-core machine at load 14 once let the duplicate run; that
    // limit is documented in docs/guide/contract.md).
    options.lock_ttl = "2s";
    options.limits = "  max_record_body: 64KiB\n";
    gateway_fixture f(options);
    const auto key = unique_key("slow-reader");
    // More than both sockets' buffers hold: the gateway waits on the client.
    constexpr std::size_t size = 32 * 1024 * 1024;
    http_connection slow(f.port(), 20s);
    slow.send_raw("POST /api/orders HTTP/1.1\r\nHost: 127.0.0.1\r\nIdempotency-Key: " + key +
                  "\r\nX-Test-Body-Size: " + std::to_string(size) + "\r\nContent-Length: 2\r\n\r\n{}");
    REQUIRE(f.wait_for_executions(1));
    std::this_thread::sleep_for(3s); // past lock_ttl by half, and the client has read nothing
    auto duplicate = f.post("/api/orders", key, "{}");
    CHECK(is_problem(duplicate, 409));
    CHECK(duplicate.header("idempotency-status") == "in-flight");
    CHECK(f.executions() == 1);
    auto whole = slow.read_response();
    CHECK(whole.body.size() == size);
    CHECK(is_problem(f.post("/api/orders", key, "{}"), 422));
    CHECK(f.executions() == 1);
}
