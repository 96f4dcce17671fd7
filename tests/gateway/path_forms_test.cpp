// SPDX-License-Identifier: Apache-2.0
// Routes are matched, and fingerprints made, on the normal form of the path (RFC 3986 6.2.2,
// runs of '/' as one): a spelling of a guarded path that most upstreams route to the same handler
// ("/shop//orders", "/shop/%6Frders", "/shop/./orders") does not fall through to a catch-all
// route behind it, and the upstream still gets the client's spelling. Against the real binary,
// over HTTP/1.1 and HTTP/2, over the store under test.
#include "gateway_fixture.hpp"
#include "h2_support.hpp"

#include <doctest/doctest.h>

using namespace idemgate::test;

namespace {

// A guarded route, then a catch-all without idempotency (after the fixture's own routes).
gateway_options guarded_then_catch_all()
{
    gateway_options o;
    o.extra_routes = "  - path_prefix: \"/shop/orders\"\n"
                     "    upstream: orders\n"
                     "    idempotency:\n"
                     "      methods: [POST]\n"
                     "  - path_prefix: \"/\"\n"
                     "    upstream: orders\n";
    o.top_level = "http2:\n  cleartext: true\n";
    return o;
}

// The target the upstream received, from the test upstream's echo.
std::string upstream_target(const http_response& res)
{
    auto echo = parse_object(res.body);
    auto* target = echo.if_contains("target");
    return target && target->is_string() ? std::string(target->as_string()) : std::string();
}

std::string member_of(const http_response& res, const char* name)
{
    auto doc = parse_object(res.body);
    auto* member = doc.if_contains(name);
    return member && member->is_string() ? std::string(member->as_string()) : std::string();
}

} // namespace

TEST_SUITE_BEGIN("paths");

TEST_CASE("paths: every spelling of a guarded path is guarded by its route; the upstream gets the spelling")
{
    gateway_fixture f(guarded_then_catch_all());
    const auto key = unique_key("spelling");
    const std::string body = R"({"sku":"a-1"})";

    // The first spelling runs, and the upstream sees it as the client wrote it.
    auto first = f.post("/shop//orders", key, body);
    REQUIRE(first.status == 201);
    CHECK(upstream_target(first) == "/shop//orders");
    // The others have the same normal form, so the same fingerprint: replayed, never run.
    for (const char* path : {"/shop/%6Frders", "/shop/./orders", "/shop/x/../orders", "/shop/orders",
                             "/shop/%2e/orders", "//shop/orders"}) {
        CAPTURE(path);
        auto again = f.post(path, key, body);
        CHECK(again.status == 201);
        CHECK(again.header("idempotent-replayed") == "true");
        CHECK(again.body == first.body);
    }
    // Over HTTP/2 too: the same filter.
    auto h2 = h2_driver({"request", h2_port(f.port()), "POST", "/shop/%6frders", "idempotency-key:" + key,
                         "content-type:application/json", "--body", body});
    REQUIRE(h2.size() == 1);
    CHECK(h2[0].at("status").as_int64() == 201);
    CHECK(h2[0].at("body").as_string() == first.body);
    CHECK(f.executions() == 1);

    // Each spelling with a key of its own runs once, forwarded exactly as the client spelled it.
    long executed = 1;
    for (const char* path : {"/shop/%6Frders", "/shop/./orders", "/shop/x/../orders", "/shop/orders%2fx"}) {
        CAPTURE(path);
        auto own = f.post(path, unique_key("own-spelling"), body);
        CHECK(own.status == 201);
        CHECK_FALSE(own.has_header("idempotent-replayed"));
        CHECK(upstream_target(own) == path);
        CHECK(f.executions() == ++executed);
    }
    // The query is the client's too (the fingerprint keeps it as it came).
    const auto with_query = unique_key("query");
    auto queried = f.post("/shop//orders?ref=%6F//x", with_query, body);
    CHECK(upstream_target(queried) == "/shop//orders?ref=%6F//x");
    CHECK(f.post("/shop/orders?ref=%6F//x", with_query, body).header("idempotent-replayed") == "true");
    CHECK(is_problem(f.post("/shop/orders?ref=o//x", with_query, body), 409));
}

TEST_CASE("paths: an escaped '/' is not a separator, and its hex digits' case does not matter")
{
    gateway_fixture f(guarded_then_catch_all());
    const std::string body = "{}";
    const auto key = unique_key("slash");
    REQUIRE(f.post("/shop/orders/x", key, body).status == 201);
    // "%2F" is not decoded: another path, so another fingerprint under the same key.
    CHECK(is_problem(f.post("/shop/orders%2Fx", key, body), 409));

    const auto escaped = unique_key("escaped-slash");
    auto first = f.post("/shop/orders%2fx", escaped, body);
    REQUIRE(first.status == 201);
    CHECK(upstream_target(first) == "/shop/orders%2fx");
    CHECK(f.post("/shop/orders%2Fx", escaped, body).header("idempotent-replayed") == "true");
    CHECK(f.executions() == 2);
}

TEST_CASE("paths: a path with no normal form is refused 400 invalid-path, whatever route it names")
{
    gateway_fixture f(guarded_then_catch_all());
    struct row {
        const char* path;
        const char* where;
    };
    const row rows[] = {
        {"/shop/%zz", "'%' not followed by two hexadecimal digits at position 7"},
        {"/shop/orders/%4", "'%' not followed by two hexadecimal digits at position 14"},
        {"/../shop/orders", "\"..\" segment at position 2 climbs above the root"},
        {"/shop/../../orders", "\"..\" segment at position 10 climbs above the root"},
        {"/plain/%G0", "'%' not followed by two hexadecimal digits at position 8"},
    };
    for (const auto& r : rows) {
        CAPTURE(r.path);
        auto res = f.post(r.path, unique_key("bad-path"), "{}");
        CHECK(is_problem(res, 400));
        CHECK(member_of(res, "type") == "/.well-known/idempotency/problems/invalid-path");
        CHECK_MESSAGE(member_of(res, "detail").find(r.where) != std::string::npos, member_of(res, "detail"));
        CHECK_FALSE(res.has_header("idempotency-status"));
    }
    auto h2 = h2_driver({"request", h2_port(f.port()), "GET", "/x/%zz"});
    REQUIRE(h2.size() == 1);
    CHECK(h2[0].at("status").as_int64() == 400);
    CHECK(f.executions() == 0);
    // The query is not the path: a bad escape there is the upstream's business.
    auto queried = f.post("/shop/orders?q=%zz", unique_key("query-escape"), "{}");
    CHECK(queried.status == 201);
    CHECK(upstream_target(queried) == "/shop/orders?q=%zz");
}

TEST_SUITE_END();
