// SPDX-License-Identifier: Apache-2.0
// The key as clients send it (RFC 8941 String or bare), the route's key format, per-route key
// spaces, and conflicts that point to the original answer: against the real binary over both
// stores.
#include "reload_support.hpp"

#include <doctest/doctest.h>
#include <thread>

using namespace idemgate::test;

namespace {

using headers_type = std::vector<std::pair<std::string, std::string>>;

// A POST with the key field exactly as given (quotes and escapes included).
http_response post_field(gateway_fixture& f, const std::string& path, const std::string& field,
                         const std::string& body = "{}")
{
    return gateway_request(f.port(), "POST", path,
                           {{"Idempotency-Key", field}, {"Content-Type", "application/json"}}, body);
}

// A string member of the problem document, or "".
std::string member_of(const http_response& res, const char* name)
{
    auto doc = parse_object(res.body);
    auto* member = doc.if_contains(name);
    return member && member->is_string() ? std::string(member->as_string()) : std::string();
}

std::string detail_of(const http_response& res)
{
    return member_of(res, "detail");
}

// A 400 invalid-idempotency-key whose detail contains `part`; nothing reached the upstream.
void check_invalid_key(const http_response& res, const std::string& part)
{
    CHECK(is_problem(res, 400));
    CHECK(parse_object(res.body)["type"] == "/.well-known/idempotency/problems/invalid-idempotency-key");
    CHECK_MESSAGE(detail_of(res).find(part) != std::string::npos, detail_of(res));
}

http_response admin_get(gateway_fixture& f, const std::string& target)
{
    return http_request(f.gateway->admin_port(), "GET", target, {{"Authorization", "Bearer " + admin_token}},
                        {});
}

} // namespace

TEST_SUITE_BEGIN("keys");

TEST_CASE("keys: the quoted and the bare spelling of a key replay each other")
{
    gateway_fixture f;
    const auto key = unique_key("quoted");
    auto first = post_field(f, "/api/orders", "\"" + key + "\"");
    REQUIRE(first.status == 201);
    auto bare = post_field(f, "/api/orders", key);
    CHECK(bare.header("idempotent-replayed") == "true");
    CHECK(bare.body == first.body);
    // Parameters are ignored: still the same key.
    auto with_parameters = post_field(f, "/api/orders", "\"" + key + "\";client=sdk;v=2");
    CHECK(with_parameters.header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);

    // And the other way round: bare first.
    const auto other = unique_key("bare");
    REQUIRE(post_field(f, "/api/orders", other).status == 201);
    CHECK(post_field(f, "/api/orders", "\"" + other + "\"").header("idempotent-replayed") == "true");
    CHECK(f.executions() == 2);

    // A bare key keeps its ';': order;1 and order;2 are two keys.
    const auto semi = unique_key("order");
    CHECK(post_field(f, "/api/orders", semi + ";1").status == 201);
    CHECK(post_field(f, "/api/orders", semi + ";2").header("idempotent-replayed") != "true");
    CHECK(f.executions() == 4);
}

TEST_CASE("keys: escapes decode to the bare characters, and the log shows the decoded key")
{
    gateway_fixture f;
    const auto stem = unique_key("esc");
    REQUIRE(post_field(f, "/api/orders", "\"" + stem + "\\\"q\\\\b\"").status == 201);
    auto bare = post_field(f, "/api/orders", stem + "\"q\\b");
    CHECK(bare.header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);
    // The access log's key is the decoded one (JSON-escaped in the line).
    CHECK(logged(*f.gateway, "\"key\":\"" + stem + "\\\"q\\\\b\""));
}

TEST_CASE("keys: two key lines and malformed Strings are refused with what is wrong")
{
    gateway_fixture f;
    const auto key = unique_key("lines");
    auto two = gateway_request(
        f.port(), "POST", "/api/orders",
        {{"Idempotency-Key", key}, {"Idempotency-Key", key}, {"Content-Type", "application/json"}}, "{}");
    check_invalid_key(two, "Idempotency-Key must appear once; the request has 2 lines");
    check_invalid_key(post_field(f, "/api/orders", "\"abc"), "the quoted string has no closing '\"'");
    check_invalid_key(post_field(f, "/api/orders", "\"a\\nb\""),
                      "a '\\' inside the quoted string escapes only '\"' or '\\' (at position 3)");
    check_invalid_key(post_field(f, "/api/orders", "\"k1\" x"),
                      "characters after the quoted string at position 6");
    check_invalid_key(post_field(f, "/api/orders", "\"k1\", \"k2\""), "characters after the quoted string");
    check_invalid_key(post_field(f, "/api/orders", "\"k1\";=1"),
                      "malformed parameters after the quoted string");
    check_invalid_key(post_field(f, "/api/orders", "\"\""), "the quoted string is empty");
    // A decoded key with a space is outside the default format.
    check_invalid_key(
        post_field(f, "/api/orders", "\"a b\""),
        "Idempotency-Key must be 1 to 255 characters 0x21-0x7E; this key has a character outside");
    check_invalid_key(post_field(f, "/api/orders", "\"" + std::string(256, 'k') + "\""), "this key has 256");
    CHECK(f.executions() == 0);
}

TEST_CASE("keys: key_format refuses keys outside it and says the format")
{
    gateway_options options;
    options.extra_routes = "  - path_prefix: \"/uuid/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_format: { pattern: uuid }\n"
                           "  - path_prefix: \"/pattern/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_format: { min_length: 8, max_length: 40, pattern: \"ord [0-9]+\" }\n";
    options.idempotency_extra = "      key_format: { min_length: 16 }\n";
    gateway_fixture f(options);

    check_invalid_key(post_field(f, "/uuid/x", "order-42"),
                      "Idempotency-Key must be a UUID (8-4-4-4-12 hexadecimal digits");
    const std::string uuid = "123e4567-e89b-12d3-a456-426614174000";
    CHECK(post_field(f, "/uuid/x", "\"" + uuid + "\"").status == 201);
    CHECK(post_field(f, "/uuid/x", uuid).header("idempotent-replayed") == "true");

    check_invalid_key(post_field(f, "/api/orders", "short"),
                      "Idempotency-Key must be 16 to 255 characters 0x21-0x7E; this key has 5");
    CHECK(post_field(f, "/api/orders", unique_key("long-enough-key")).status == 201);

    check_invalid_key(
        post_field(f, "/pattern/x", "\"ord 123x\""),
        "Idempotency-Key must be 8 to 40 characters 0x20-0x7E matching the pattern ord [0-9]+; this key "
        "does not match");
    // The pattern lets a space in.
    CHECK(post_field(f, "/pattern/x", "\"ord 4711\"").status == 201);
    CHECK(f.executions() == 3);
}

TEST_CASE("keys: key_space: route makes two routes with one key independent; the admin API finds each")
{
    gateway_options options;
    options.extra_routes = "  - path_prefix: \"/create/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_space: route\n"
                           "  - path_prefix: \"/capture/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_space: route\n";
    options.top_level = "admin:\n  token_env: IDEMGATE_TEST_ADMIN_TOKEN\n";
    options.env.emplace_back("IDEMGATE_TEST_ADMIN_TOKEN", admin_token);
    gateway_fixture f(options);
    const auto key = unique_key("space");
    auto create = f.post("/create/p1", key, "{}");
    auto capture = f.post("/capture/p1", key, R"({"amount":1})");
    CHECK(create.status == 201);
    CHECK(capture.status == 201);
    CHECK(capture.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
    CHECK(f.post("/create/p1", key, "{}").body == create.body);
    CHECK(f.post("/capture/p1", key, R"({"amount":1})").body == capture.body);
    CHECK(f.executions() == 2);

    // The tenant's key space (the default) is shared by its routes: the same key on another
    // default route is the same key, with another fingerprint.
    const auto shared = unique_key("shared");
    CHECK(f.post("/api/orders", shared, "{}").status == 201);
    CHECK(is_problem(f.post("/strict/orders", shared, "{}"), 409));

    auto found = admin_get(f, "/admin/v1/records?key=" + key + "&route=/create/");
    REQUIRE(found.status == 200);
    CHECK(parse_object(found.body)["state"] == "completed");
    CHECK(admin_get(f, "/admin/v1/records?key=" + key + "&route=/capture/").status == 200);
    // Not in the tenant's space, and the quoted spelling names the same record.
    CHECK(is_problem(admin_get(f, "/admin/v1/records?key=" + key), 404));
    CHECK(admin_get(f, "/admin/v1/records?key=%22" + key + "%22&route=/create/").status == 200);
    CHECK(is_problem(admin_get(f, "/admin/v1/records?key=%22" + key + "&route=/create/"), 400));
}

TEST_CASE("keys: a mismatch points to the first answer's Location")
{
    gateway_fixture f;
    const auto key = unique_key("original");
    auto first = f.post("/api/orders", key, R"({"amount":1})");
    REQUIRE(first.status == 201);
    const auto location = first.header("location");
    REQUIRE(!location.empty());

    auto reused = f.post("/api/orders", key, R"({"amount":2})");
    CHECK(is_problem(reused, 409));
    CHECK(parse_object(reused.body)["type"] == "/.well-known/idempotency/problems/idempotency-key-reused");
    CHECK(member_of(reused, "location") == location);
    CHECK(reused.header("link") == "<" + location + ">; rel=\"original\"");
    CHECK(f.executions() == 1);

    // A conflict with a request still in flight has no answer to point to.
    const auto slow = unique_key("slow");
    std::thread first_slow([&] { f.post("/api/orders", slow, "{}", {{"X-Test-Delay-Ms", "600"}}); });
    REQUIRE(f.wait_for_executions(2));
    auto during = f.post("/api/orders", slow, R"({"other":1})");
    first_slow.join();
    CHECK(is_problem(during, 409));
    CHECK_FALSE(parse_object(during.body).contains("location"));
    CHECK_FALSE(during.has_header("link"));
}

TEST_CASE("keys: mismatch_status 422 carries the Location too")
{
    gateway_options options;
    options.idempotency_extra = "      mismatch_status: 422\n";
    gateway_fixture f(options);
    const auto key = unique_key("original-422");
    auto first = f.post("/api/orders", key, R"({"amount":1})");
    REQUIRE(first.status == 201);
    auto reused = f.post("/api/orders", key, R"({"amount":2})");
    CHECK(is_problem(reused, 422));
    CHECK(member_of(reused, "location") == first.header("location"));
    std::string link = "<";
    link += first.header("location");
    link += ">; rel=\"original\"";
    CHECK(reused.header("link") == link);
}

TEST_SUITE_END();
