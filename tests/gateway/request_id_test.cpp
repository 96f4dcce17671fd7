// SPDX-License-Identifier: Apache-2.0
// Request IDs: generated when absent, kept when valid, replaced when not; seen by the
// upstream, returned on every answer (a replay with its own ID), written to the access log with
// the trace ID of a valid traceparent.
#include "gateway_fixture.hpp"

#include <doctest/doctest.h>

using namespace idemgate::test;

namespace {

bool is_generated_id(const std::string& id)
{
    return id.size() == 32 && id.find_first_not_of("0123456789abcdef") == std::string::npos;
}

// The X-Request-Id header the upstream received, from its JSON echo ("" when absent).
std::string upstream_saw(const http_response& res, const std::string& header = "x-request-id")
{
    auto echo = parse_object(res.body);
    auto* headers = echo.if_contains("headers");
    if (!headers || !headers->is_object())
        return {};
    auto* value = headers->as_object().if_contains(header);
    return value && value->is_string() ? std::string(value->as_string()) : std::string();
}

// The access log line carrying this request ID (empty object when none arrives in 5 s).
boost::json::object access_line_of(child_process& gateway, const std::string& request_id)
{
    auto line = gateway.wait_for_line(
        [&](const std::string& l) {
            auto obj = parse_object(l);
            auto* msg = obj.if_contains("msg");
            auto* id = obj.if_contains("request_id");
            return msg && *msg == "access" && id && id->is_string() && id->as_string() == request_id;
        },
        5s);
    return line ? parse_object(*line) : boost::json::object{};
}

std::size_t header_lines(const http_response& res, const std::string& lower_name)
{
    return res.headers.count(lower_name);
}

} // namespace

TEST_SUITE_BEGIN("request ids");

TEST_CASE("a request without an ID gets a new one: forwarded, returned and logged")
{
    gateway_fixture f;
    auto res = f.post("/api/orders", unique_key("rid-new"), "{}");
    REQUIRE(res.status == 201);
    auto id = res.header("x-request-id");
    CHECK(is_generated_id(id));
    CHECK(header_lines(res, "x-request-id") == 1);
    CHECK(upstream_saw(res) == id);
    auto line = access_line_of(f.process(), id);
    REQUIRE_MESSAGE(!line.empty(), f.process().output());
    CHECK(line["outcome"] == "executed");
    CHECK_FALSE(line.contains("trace_id"));

    auto other = f.post("/api/orders", unique_key("rid-new"), "{}");
    CHECK(is_generated_id(other.header("x-request-id")));
    CHECK(other.header("x-request-id") != id);
}

TEST_CASE("a valid incoming ID is kept end to end")
{
    gateway_fixture f;
    const std::string id = "client-req_42.abc:XYZ/~";
    auto res = f.post("/api/orders", unique_key("rid-keep"), "{}", {{"X-Request-Id", id}});
    REQUIRE(res.status == 201);
    CHECK(res.header("x-request-id") == id);
    CHECK(upstream_saw(res) == id);
    CHECK_FALSE(access_line_of(f.process(), id).empty());

    // Unguarded traffic too: pass-through and GET.
    auto get = gateway_request(f.port(), "GET", "/plain/x", {{"X-Request-Id", "plain-get-1"}});
    CHECK(get.header("x-request-id") == "plain-get-1");
    CHECK(upstream_saw(get) == "plain-get-1");
}

TEST_CASE("an unusable incoming ID is replaced, upstream and in the answer")
{
    gateway_fixture f;
    struct row {
        const char* name;
        std::vector<std::pair<std::string, std::string>> headers;
    };
    const row rows[] = {
        {"a space inside", {{"X-Request-Id", "two words"}}},
        {"201 characters", {{"X-Request-Id", std::string(201, 'a')}}},
        {"two lines", {{"X-Request-Id", "first"}, {"X-Request-Id", "second"}}},
        {"a non-ASCII byte", {{"X-Request-Id", "caf\xc3\xa9"}}},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        auto res = f.post("/api/orders", unique_key("rid-bad"), "{}", r.headers);
        REQUIRE(res.status == 201);
        auto id = res.header("x-request-id");
        CHECK(is_generated_id(id));
        CHECK(header_lines(res, "x-request-id") == 1);
        // The upstream's echo joins repeated lines with ", ": one line, the new ID.
        CHECK(upstream_saw(res) == id);
    }
    // 200 characters is still valid.
    const std::string longest(200, 'z');
    auto res = f.post("/api/orders", unique_key("rid-200"), "{}", {{"X-Request-Id", longest}});
    CHECK(res.header("x-request-id") == longest);
}

TEST_CASE("a replay carries its own request's ID, never the recorded one")
{
    gateway_fixture f;
    const std::string key = unique_key("rid-replay");
    // The upstream echoes the ID as a response header, as many applications do: it must not
    // become part of the record.
    auto first = f.post("/api/orders", key, "{}",
                        {{"X-Request-Id", "first-attempt"}, {"X-Test-Echo-Request-Id", "1"}});
    REQUIRE(first.status == 201);
    CHECK(first.header("x-request-id") == "first-attempt");
    CHECK(header_lines(first, "x-request-id") == 1);

    auto retry = f.post("/api/orders", key, "{}",
                        {{"X-Request-Id", "second-attempt"}, {"X-Test-Echo-Request-Id", "1"}});
    REQUIRE(retry.status == 201);
    CHECK(retry.header("idempotent-replayed") == "true");
    CHECK(retry.header("x-request-id") == "second-attempt");
    CHECK(header_lines(retry, "x-request-id") == 1);
    CHECK(retry.body == first.body); // the recorded answer, byte for byte
    auto line = access_line_of(f.process(), "second-attempt");
    REQUIRE(!line.empty());
    CHECK(line["outcome"] == "replayed");

    auto anonymous = f.post("/api/orders", key, "{}");
    CHECK(anonymous.header("idempotent-replayed") == "true");
    CHECK(is_generated_id(anonymous.header("x-request-id")));
    CHECK(header_lines(anonymous, "x-request-id") == 1);
    CHECK(f.executions() == 1);
}

// It reads the record's bytes in Redis.
TEST_CASE("the request ID is not part of the stored record, even when the upstream echoes it" *
          needs_store("redis"))
{
    gateway_fixture f;
    const std::string key = unique_key("rid-record");
    // A body of 'x' bytes: the default JSON echo would hold the request's headers.
    auto first = f.post("/api/orders", key, "{}",
                        {{"X-Request-Id", "id-that-must-not-be-stored"},
                         {"X-Test-Echo-Request-Id", "1"},
                         {"X-Test-Body-Size", "8"}});
    REQUIRE(first.status == 201);
    CHECK(first.header("x-request-id") == "id-that-must-not-be-stored");
    auto stored = f.store.redis->command({"GET", "idemgate-test::" + key});
    REQUIRE_MESSAGE(stored.find("xxxxxxxx") != std::string::npos, stored); // the record is there
    CHECK(stored.find("id-that-must-not-be-stored") == std::string::npos);
}

TEST_CASE("answers the gateway makes itself carry the ID: problems, 502, 409, 400 on framing")
{
    gateway_fixture f;
    auto missing = f.post("/strict/orders", "", "{}", {{"X-Request-Id", "strict-1"}});
    CHECK(is_problem(missing, 400));
    CHECK(missing.header("x-request-id") == "strict-1");

    auto down = f.post("/down/orders", unique_key("rid-down"), "{}", {{"X-Request-Id", "down-1"}});
    CHECK(is_problem(down, 502));
    CHECK(down.header("x-request-id") == "down-1");

    const std::string key = unique_key("rid-mismatch");
    REQUIRE(f.post("/api/orders", key, "{}").status == 201);
    auto mismatch = f.post("/api/orders", key, R"({"other":1})", {{"X-Request-Id", "mismatch-1"}});
    CHECK(is_problem(mismatch, 409));
    CHECK(mismatch.header("x-request-id") == "mismatch-1");

    auto upstream_error = f.post("/api/orders", unique_key("rid-503"), "{}",
                                 {{"X-Request-Id", "upstream-503"}, {"X-Test-Status", "503"}});
    CHECK(upstream_error.status == 503);
    CHECK(upstream_error.header("x-request-id") == "upstream-503");

    // A request refused on its framing (after the header was read) keeps its ID...
    http_connection conn(f.port(), io_timeout);
    // (HTTP/1.1 without Host: refused by the gateway's own framing check)
    conn.send_raw("GET /plain/x HTTP/1.1\r\nX-Request-Id: smuggle-1\r\n\r\n");
    auto framing = conn.read_response();
    CHECK(is_problem(framing, 400));
    CHECK(framing.header("x-request-id") == "smuggle-1");
    CHECK_FALSE(access_line_of(f.process(), "smuggle-1").empty());

    // ... and one whose header could not be read gets a new one.
    http_connection big(f.port(), io_timeout);
    big.send_raw("GET /plain/x HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + std::string(20000, 'b') +
                 "\r\n\r\n");
    auto too_large = big.read_response();
    CHECK(is_problem(too_large, 431));
    CHECK(is_generated_id(too_large.header("x-request-id")));
}

TEST_CASE("traceparent is forwarded unchanged and its trace ID logged; an invalid one is not logged")
{
    gateway_fixture f;
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto res = f.post("/api/orders", unique_key("rid-trace"), "{}",
                      {{"X-Request-Id", "traced-1"}, {"traceparent", tp}});
    REQUIRE(res.status == 201);
    CHECK(upstream_saw(res, "traceparent") == tp);
    auto line = access_line_of(f.process(), "traced-1");
    REQUIRE(!line.empty());
    CHECK(line["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736");

    const std::string bad = "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01";
    auto res2 = f.post("/api/orders", unique_key("rid-trace"), "{}",
                       {{"X-Request-Id", "traced-2"}, {"traceparent", bad}});
    CHECK(upstream_saw(res2, "traceparent") == bad); // forwarded as it came
    auto line2 = access_line_of(f.process(), "traced-2");
    REQUIRE(!line2.empty());
    CHECK_FALSE(line2.contains("trace_id"));
}

TEST_CASE("request_id_header: \"\" turns request IDs off; another name is honoured")
{
    {
        gateway_options options;
        options.top_level = "request_id_header: \"\"\n";
        gateway_fixture f(options);
        auto res = f.post("/api/orders", unique_key("rid-off"), "{}", {{"X-Request-Id", "left-alone"}});
        CHECK_FALSE(res.has_header("x-request-id"));
        CHECK(upstream_saw(res) == "left-alone"); // an ordinary header, passed through
        auto none = f.post("/api/orders", unique_key("rid-off"), "{}");
        CHECK_FALSE(none.has_header("x-request-id"));
        CHECK(upstream_saw(none).empty());
    }
    {
        gateway_options options;
        options.top_level = "request_id_header: X-Correlation-ID\n";
        gateway_fixture f(options);
        auto res = f.post("/api/orders", unique_key("rid-named"), "{}", {{"X-Correlation-ID", "corr-7"}});
        CHECK(res.header("x-correlation-id") == "corr-7");
        CHECK(upstream_saw(res, "x-correlation-id") == "corr-7");
        CHECK_FALSE(res.has_header("x-request-id"));
    }
}

TEST_SUITE_END();
