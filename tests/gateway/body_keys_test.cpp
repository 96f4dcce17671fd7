// SPDX-License-Identifier: Apache-2.0
// Keys from a JSON body (key_from: json | header_or_json): a legacy client protected without a
// header, against the real binary over both stores.
#include "gateway_fixture.hpp"

#include <cstdlib>
#include <doctest/doctest.h>
#include <functional>

using namespace idemgate::test;

namespace {

gateway_options body_key_options()
{
    gateway_options options;
    options.extra_routes = "  - path_prefix: \"/legacy/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_from: json\n"
                           "      key_json_pointer: /client_ref\n"
                           "  - path_prefix: \"/legacy-strict/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_from: json\n"
                           "      key_json_pointer: /order/client_ref\n"
                           "      required: true\n"
                           "  - path_prefix: \"/composite/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_from: json\n"
                           "      key_json_pointers: [/merchant_id, /order_ref]\n"
                           "  - path_prefix: \"/either/\"\n"
                           "    upstream: orders\n"
                           "    idempotency:\n"
                           "      key_from: header_or_json\n"
                           "      key_json_pointer: /client_ref\n";
    return options;
}

// A POST without an Idempotency-Key header.
http_response post_body(gateway_fixture& f, const std::string& path, const std::string& body,
                        const std::string& content_type = "application/json")
{
    return gateway_request(f.port(), "POST", path, {{"Content-Type", content_type}}, body);
}

std::string detail_of(const http_response& res)
{
    auto doc = parse_object(res.body);
    auto* detail = doc.if_contains("detail");
    return detail && detail->is_string() ? std::string(detail->as_string()) : std::string();
}

} // namespace

TEST_SUITE_BEGIN("body-keys");

TEST_CASE("body keys: a legacy JSON client's field is its key: replayed, mismatched, or unguarded without it")
{
    gateway_fixture f(body_key_options());
    const auto ref = unique_key("ref");
    const std::string body = R"({"client_ref":")" + ref + R"(","amount":1})";
    auto first = post_body(f, "/legacy/orders", body);
    REQUIRE(first.status == 201);
    auto again = post_body(f, "/legacy/orders", body);
    CHECK(again.header("idempotent-replayed") == "true");
    CHECK(again.body == first.body);
    CHECK(f.executions() == 1);

    // The same client_ref with another body: the key was used for another request.
    auto other = post_body(f, "/legacy/orders", R"({"client_ref":")" + ref + R"(","amount":2})");
    CHECK(is_problem(other, 409));
    CHECK(f.executions() == 1);

    // A number is a key too.
    const std::string numbered =
        R"({"client_ref":)" + std::to_string(std::hash<std::string>{}(ref) % 1000000) + R"(,"amount":3})";
    REQUIRE(post_body(f, "/legacy/orders", numbered).status == 201);
    CHECK(post_body(f, "/legacy/orders", numbered).header("idempotent-replayed") == "true");
    CHECK(f.executions() == 2);

    // Without the field, with an empty one, or with a body that is not JSON: forwarded unguarded.
    for (const std::string& unguarded :
         {std::string(R"({"amount":1})"), std::string(R"({"client_ref":"","amount":1})"),
          std::string(R"({"client_ref":{"nested":1}})"), std::string("client_ref=x")}) {
        CAPTURE(unguarded);
        auto before = f.executions();
        CHECK(post_body(f, "/legacy/orders", unguarded).status == 201);
        CHECK(post_body(f, "/legacy/orders", unguarded).header("idempotent-replayed") != "true");
        CHECK(f.executions() == before + 2);
    }
}

TEST_CASE("body keys: integers past 64 bits differing in the last digit are two keys")
{
    gateway_fixture f(body_key_options());
    const auto run = std::to_string(100000000 + std::hash<std::string>{}(unique_key("big")) % 900000000);
    const std::string a = "1" + run + "000000000000001";
    const std::string b = "1" + run + "000000000000002";
    // One double holds both: read as doubles they were one key.
    REQUIRE(std::strtod(a.c_str(), nullptr) == std::strtod(b.c_str(), nullptr));
    const std::string first_body = R"({"client_ref":)" + a + R"(,"amount":1})";
    const std::string second_body = R"({"client_ref":)" + b + R"(,"amount":1})";
    auto first = post_body(f, "/legacy/orders", first_body);
    REQUIRE(first.status == 201);
    auto second = post_body(f, "/legacy/orders", second_body);
    CHECK(second.status == 201);
    CHECK(second.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
    // Each replays its own.
    CHECK(post_body(f, "/legacy/orders", second_body).body == second.body);
    CHECK(post_body(f, "/legacy/orders", first_body).body == first.body);
    CHECK(f.executions() == 2);
}

TEST_CASE("body keys: required: true answers 400 naming the pointer")
{
    gateway_fixture f(body_key_options());
    auto missing = post_body(f, "/legacy-strict/orders", R"({"order":{"amount":1}})");
    CHECK(is_problem(missing, 400));
    CHECK(parse_object(missing.body)["type"] == "/.well-known/idempotency/problems/missing-idempotency-key");
    CHECK_MESSAGE(detail_of(missing).find("/order/client_ref is absent, empty or not a string or number") !=
                      std::string::npos,
                  detail_of(missing));
    auto not_json = post_body(f, "/legacy-strict/orders", "<order/>", "application/xml");
    CHECK(is_problem(not_json, 400));
    CHECK(detail_of(not_json).find("the body is not JSON") != std::string::npos);
    CHECK(f.executions() == 0);

    const std::string body = R"({"order":{"client_ref":")" + unique_key("nested") + R"("}})";
    CHECK(post_body(f, "/legacy-strict/orders", body).status == 201);
    CHECK(post_body(f, "/legacy-strict/orders", body).header("idempotent-replayed") == "true");
    CHECK(f.executions() == 1);
}

TEST_CASE("body keys: a composite key joins its fields unambiguously")
{
    gateway_fixture f(body_key_options());
    const auto m = unique_key("m");
    const std::string body = R"({"merchant_id":")" + m + R"(","order_ref":"o1"})";
    REQUIRE(post_body(f, "/composite/orders", body).status == 201);
    CHECK(post_body(f, "/composite/orders", body).header("idempotent-replayed") == "true");
    // Another order of the same merchant is another key.
    CHECK(post_body(f, "/composite/orders", R"({"merchant_id":")" + m + R"(","order_ref":"o2"})")
              .header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
    // A separator inside a value cannot make two lists of values one key: were these one key,
    // the second (another body) would be a mismatch.
    CHECK(post_body(f, "/composite/orders", R"({"merchant_id":")" + m + R"(,o","order_ref":"x"})").status ==
          201);
    CHECK(post_body(f, "/composite/orders", R"({"merchant_id":")" + m + R"(","order_ref":"o,x"})").status ==
          201);
    CHECK(f.executions() == 4);
    // One field missing: unguarded.
    CHECK(post_body(f, "/composite/orders", R"({"merchant_id":")" + m + R"("})").status == 201);
    CHECK(post_body(f, "/composite/orders", R"({"merchant_id":")" + m + R"("})")
              .header("idempotent-replayed") != "true");
    CHECK(f.executions() == 6);
}

TEST_CASE("body keys: with header_or_json the header wins when present")
{
    gateway_fixture f(body_key_options());
    const auto header_key = unique_key("hdr");
    const auto body_ref = unique_key("body");
    const std::string body = R"({"client_ref":")" + body_ref + R"("})";
    auto with_header = f.post("/either/orders", header_key, body);
    REQUIRE(with_header.status == 201);
    // The body's key was not used by the first request: without the header, it runs.
    auto without_header = post_body(f, "/either/orders", body);
    CHECK(without_header.status == 201);
    CHECK(without_header.header("idempotent-replayed") != "true");
    CHECK(f.executions() == 2);
    // Each spelling replays its own.
    CHECK(f.post("/either/orders", header_key, body).body == with_header.body);
    CHECK(post_body(f, "/either/orders", body).body == without_header.body);
    CHECK(f.executions() == 2);
}

TEST_SUITE_END();
