// SPDX-License-Identifier: Apache-2.0
// The key field (RFC 8941 String or legacy bare key) and the route's key format, as tables.
#include <doctest/doctest.h>
#include <idemgate/config/key_pattern.hpp>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/key_syntax.hpp>
#include <string>

using namespace idemgate;
using namespace idemgate::gateway;

namespace {

config::key_format_config format_with(std::string pattern, std::size_t min = 1, std::size_t max = 255)
{
    config::key_format_config f;
    f.min_length = min;
    f.max_length = max;
    f.uuid = pattern == "uuid";
    if (!pattern.empty() && !f.uuid) {
        std::string error;
        f.regex = config::key_pattern::compile(pattern, error);
        REQUIRE_MESSAGE(f.regex, error);
    }
    f.pattern = std::move(pattern);
    return f;
}

} // namespace

TEST_CASE("key field: quoted Strings decode, anything else is the bare key taken whole")
{
    struct row {
        const char* field;
        const char* key;
        bool quoted;
    };
    const row rows[] = {
        {"k1", "k1", false},
        {R"("k1")", "k1", true},
        {"order;1", "order;1", false}, // a bare key keeps its ';'
        {"order;2", "order;2", false},
        {R"(a"b)", R"(a"b)", false}, // a quote not at the start is a bare character
        {R"("a\"b")", R"(a"b)", true},
        {R"("a\\b")", R"(a\b)", true},
        {R"("\\\"")", R"(\")", true},
        {R"("with space")", "with space", true},
        {R"("k1";a)", "k1", true},
        {R"("k1";a=1;b="x";c=?0;d=tok/en:1;e=:aGk=:;f=-1.5;*g)", "k1", true},
        {R"("k1"; a=1)", "k1", true}, // RFC 8941: spaces after ';'
        {R"("k1"  )", "k1", true},    // trailing spaces
        {"", "", false},              // empty bare: the format check refuses it
    };
    for (const auto& r : rows) {
        CAPTURE(r.field);
        std::string storage;
        auto parsed = parse_key_field(r.field, storage);
        CHECK(parsed.error == key_syntax::ok);
        CHECK(parsed.key == r.key);
        CHECK(parsed.quoted == r.quoted);
    }
}

TEST_CASE("key field: malformed Strings are refused with the place of the problem")
{
    struct row {
        const char* field;
        key_syntax error;
        std::size_t offset;
    };
    const row rows[] = {
        {R"("")", key_syntax::empty_string, 0},
        {R"("";a=1)", key_syntax::empty_string, 0},
        {R"(")", key_syntax::unterminated, 1},
        {R"("abc)", key_syntax::unterminated, 4},
        {R"("abc\")", key_syntax::unterminated, 6},
        {R"("abc\)", key_syntax::unterminated, 5},
        {R"("a\nb")", key_syntax::bad_escape, 2},
        {R"("a\'b")", key_syntax::bad_escape, 2},
        {"\"a\tb\"", key_syntax::bad_string_char, 2},
        {"\"caf\xc3\xa9\"", key_syntax::bad_string_char, 4},
        {R"("k1";)", key_syntax::bad_parameters, 4},
        {R"("k1";A=1)", key_syntax::bad_parameters, 4},
        {R"("k1";a=)", key_syntax::bad_parameters, 4},
        {R"("k1";a=?2)", key_syntax::bad_parameters, 4},
        {R"("k1";a="x)", key_syntax::bad_parameters, 4},
        {R"("k1";a=:ab)", key_syntax::bad_parameters, 4},
        {R"("k1";a=1234567890123456)", key_syntax::bad_parameters, 4},
        {R"("k1";a=1.2345)", key_syntax::bad_parameters, 4},
        {R"("k1";a=1.)", key_syntax::bad_parameters, 4},
        {R"("k1"x)", key_syntax::trailing_characters, 4},
        {R"("k1", "k2")", key_syntax::trailing_characters, 4},
        {R"("k1" "k2")", key_syntax::trailing_characters, 5},
        {R"("k1";a=1 x)", key_syntax::trailing_characters, 9},
    };
    for (const auto& r : rows) {
        CAPTURE(r.field);
        std::string storage;
        auto parsed = parse_key_field(r.field, storage);
        CHECK(parsed.error == r.error);
        CHECK(parsed.offset == r.offset);
        CHECK(parsed.quoted);
        CHECK_FALSE(describe(parsed.error, parsed.offset, "Idempotency-Key").empty());
    }
    std::string storage;
    auto nul = parse_key_field(std::string_view("\"a\0b\"", 5), storage);
    CHECK(nul.error == key_syntax::bad_string_char);
    CHECK(nul.offset == 2);
}

TEST_CASE("key field: the detail names the problem and its position")
{
    std::string storage;
    auto unterminated = parse_key_field(R"("abc)", storage);
    CHECK(describe(unterminated.error, unterminated.offset, "Idempotency-Key") ==
          "Idempotency-Key: the quoted string has no closing '\"'");
    auto escape = parse_key_field(R"("a\nb")", storage);
    CHECK(describe(escape.error, escape.offset, "Idempotency-Key") ==
          R"(Idempotency-Key: a '\' inside the quoted string escapes only '"' or '\' (at position 3))");
    auto trailing = parse_key_field(R"("k1"x)", storage);
    CHECK(describe(trailing.error, trailing.offset, "X-Key")
              .find("characters after the quoted string at position 5") != std::string::npos);
    CHECK(describe(key_syntax::empty_string, 0, "K") ==
          "K: the quoted string is empty; a key has at least one character");
    CHECK(describe(key_syntax::ok, 0, "K").empty());
}

TEST_CASE("uuid: 8-4-4-4-12 hexadecimal digits, either case")
{
    CHECK(is_uuid("123e4567-e89b-12d3-a456-426614174000"));
    CHECK(is_uuid("123E4567-E89B-12D3-A456-426614174000"));
    CHECK_FALSE(is_uuid("123e4567e89b12d3a456426614174000"));
    CHECK_FALSE(is_uuid("123e4567-e89b-12d3-a456-42661417400"));
    CHECK_FALSE(is_uuid("123e4567-e89b-12d3-a456-4266141740000"));
    CHECK_FALSE(is_uuid("123e4567-e89b-12d3-a456_426614174000"));
    CHECK_FALSE(is_uuid("g23e4567-e89b-12d3-a456-426614174000"));
    CHECK_FALSE(is_uuid("{23e4567-e89b-12d3-a456-42661417400}"));
    CHECK_FALSE(is_uuid(""));
}

TEST_CASE("key format: lengths, characters, uuid and patterns")
{
    struct row {
        const char* name;
        config::key_format_config format;
        std::string key;
        key_format_check expected;
    };
    const row rows[] = {
        {"default: one character", format_with(""), "a", key_format_check::ok},
        {"default: 255", format_with(""), std::string(255, 'k'), key_format_check::ok},
        {"default: empty", format_with(""), "", key_format_check::too_short},
        {"default: 256", format_with(""), std::string(256, 'k'), key_format_check::too_long},
        {"default: a space", format_with(""), "a b", key_format_check::bad_character},
        {"default: a tab", format_with(""), "a\tb", key_format_check::bad_character},
        {"default: UTF-8", format_with(""), "caf\xc3\xa9", key_format_check::bad_character},
        {"default: DEL", format_with(""), "a\x7f", key_format_check::bad_character},
        {"min_length 16", format_with("", 16), "short", key_format_check::too_short},
        {"min_length 16, 16", format_with("", 16), std::string(16, 'k'), key_format_check::ok},
        {"max_length 8", format_with("", 1, 8), "123456789", key_format_check::too_long},
        {"uuid", format_with("uuid"), "123e4567-e89b-12d3-a456-426614174000", key_format_check::ok},
        {"uuid: not one", format_with("uuid"), "order-42", key_format_check::no_match},
        {"uuid: 36 other characters", format_with("uuid"), std::string(36, 'a'), key_format_check::no_match},
        {"pattern matches the whole key", format_with("ord-[0-9]+"), "ord-42", key_format_check::ok},
        {"pattern: a prefix is not enough", format_with("ord-[0-9]+"), "ord-42x", key_format_check::no_match},
        {"pattern: a part is not enough", format_with("[0-9]+"), "x42", key_format_check::no_match},
        {"pattern allows a space", format_with("[a-z]+ [a-z]+"), "two words", key_format_check::ok},
        {"pattern: a space it does not allow", format_with("[a-z ]+x"), "a b", key_format_check::no_match},
        {"pattern: controls stay out", format_with("[^x]+"), "a\tb", key_format_check::bad_character},
        {"pattern with lengths", format_with("[a-z]+", 4, 6), "abc", key_format_check::too_short},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        CHECK(check_key_format(r.format, r.key) == r.expected);
    }
}

TEST_CASE("key format in words")
{
    CHECK(describe(format_with("")) == "1 to 255 characters 0x21-0x7E");
    CHECK(describe(format_with("", 16, 16)) == "exactly 16 characters 0x21-0x7E");
    CHECK(describe(format_with("uuid")).rfind("a UUID (8-4-4-4-12 hexadecimal digits", 0) == 0);
    CHECK(describe(format_with("ord-[0-9]+", 5, 20)) ==
          "5 to 20 characters 0x20-0x7E matching the pattern ord-[0-9]+");
}

TEST_CASE("key patterns: back-references are refused, catastrophic patterns stay fast")
{
    std::string error;
    CHECK_FALSE(config::key_pattern::compile("(a)\\1", error));
    CHECK(error == "back-references are not allowed");
    error.clear();
    CHECK_FALSE(config::key_pattern::compile("([a-z", error));
    CHECK_FALSE(error.empty());
    // Exponential for a backtracking matcher; the breadth-first one answers at once.
    auto nested = config::key_pattern::compile("(a+)+b", error);
    REQUIRE(nested);
    CHECK_FALSE(nested->matches(std::string(255, 'a')));
}

TEST_CASE("classify and its detail: key lines, syntax and format")
{
    config::idempotency_config policy;
    policy.enabled = true;
    policy.key_format = format_with("uuid");
    request_facts facts{"POST", 1, "123e4567-e89b-12d3-a456-426614174000", 0, ""};
    CHECK(classify(policy, facts) == request_verdict::guard);

    facts.key = "order-42";
    CHECK(classify(policy, facts) == request_verdict::reject_invalid_key);
    CHECK(invalid_key_detail(policy, facts) ==
          "Idempotency-Key must be a UUID (8-4-4-4-12 hexadecimal digits, e.g. "
          "123e4567-e89b-12d3-a456-426614174000); this key does not match");

    policy.key_format = format_with("", 16);
    CHECK(invalid_key_detail(policy, facts) ==
          "Idempotency-Key must be 16 to 255 characters 0x21-0x7E; this key has 8");

    facts.key_count = 2;
    CHECK(classify(policy, facts) == request_verdict::reject_invalid_key);
    CHECK(invalid_key_detail(policy, facts) == "Idempotency-Key must appear once; the request has 2 lines");

    facts.key_count = 1;
    facts.key = "";
    facts.key_error = key_syntax::unterminated;
    facts.key_error_at = 4;
    CHECK(classify(policy, facts) == request_verdict::reject_invalid_key);
    CHECK(invalid_key_detail(policy, facts) == "Idempotency-Key: the quoted string has no closing '\"'");
}
