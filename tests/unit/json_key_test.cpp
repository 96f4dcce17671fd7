// SPDX-License-Identifier: Apache-2.0
// Keys from a JSON body, as a table.
#include <boost/json/parse.hpp>
#include <doctest/doctest.h>
#include <idemgate/gateway/fingerprint.hpp>
#include <idemgate/gateway/json_key.hpp>
#include <string>
#include <vector>

using namespace idemgate::gateway;

TEST_CASE("json key: the string or number at the pointers, joined unambiguously")
{
    using status = json_key::status;
    struct row {
        const char* name;
        std::string body;
        std::vector<std::string> pointers;
        status result;
        std::string key;
        std::size_t missing = 0;
    };
    const row rows[] = {
        {"a string", R"({"client_ref":"c-1","amount":1})", {"/client_ref"}, status::found, "c-1"},
        {"a nested string", R"({"order":{"ref":"o 1"}})", {"/order/ref"}, status::found, "o 1"},
        {"an array element", R"({"refs":["a","b"]})", {"/refs/1"}, status::found, "b"},
        {"escaped pointer", R"({"a/b":"x","m~n":"y"})", {"/a~1b"}, status::found, "x"},
        {"escaped pointer ~0", R"({"a/b":"x","m~n":"y"})", {"/m~0n"}, status::found, "y"},
        {"an integer", R"({"client_ref":42})", {"/client_ref"}, status::found, "42"},
        {"a negative integer", R"({"client_ref":-7})", {"/client_ref"}, status::found, "-7"},
        {"a large unsigned",
         R"({"client_ref":18446744073709551615})",
         {"/client_ref"},
         status::found,
         "18446744073709551615"},
        {"an integer past 64 bits keeps all its digits",
         R"({"client_ref":18446744073709551616})",
         {"/client_ref"},
         status::found,
         "18446744073709551616"},
        {"and differs in its last digit",
         R"({"client_ref":18446744073709551617})",
         {"/client_ref"},
         status::found,
         "18446744073709551617"},
        {"a negative integer past 64 bits",
         R"({"client_ref":-9223372036854775809})",
         {"/client_ref"},
         status::found,
         "-9223372036854775809"},
        {"a 30-digit integer",
         R"({"client_ref":123456789012345678901234567890})",
         {"/client_ref"},
         status::found,
         "123456789012345678901234567890"},
        {"an exponent as written", R"({"client_ref":1.5e3})", {"/client_ref"}, status::found, "1.5e3"},
        {"a fraction as written", R"({"client_ref":1.0})", {"/client_ref"}, status::found, "1.0"},
        {"a capital exponent", R"({"client_ref":2E+2})", {"/client_ref"}, status::found, "2E+2"},
        {"beyond a double's range", R"({"client_ref":1e400})", {"/client_ref"}, status::found, "1e400"},
        {"-0 is 0, as ever", R"({"client_ref":-0})", {"/client_ref"}, status::found, "0"},
        {"but -0.0 is as written", R"({"client_ref":-0.0})", {"/client_ref"}, status::found, "-0.0"},
        {"an escaped string", R"({"client_ref":"a\u00e9\n"})", {"/client_ref"}, status::found, "a\xc3\xa9\n"},
        {"an escaped member name", R"({"a\u002fb":"x"})", {"/a~1b"}, status::found, "x"},
        {"a duplicate key: the last",
         R"({"client_ref":"a","client_ref":"b"})",
         {"/client_ref"},
         status::found,
         "b"},
        {"array index 0", R"({"refs":[7,8]})", {"/refs/0"}, status::found, "7"},
        {"no leading zero in an index", R"({"refs":[7,8]})", {"/refs/01"}, status::missing, ""},
        {"no element after the last", R"({"refs":[7,8]})", {"/refs/-"}, status::missing, ""},
        {"past the end", R"({"refs":[7,8]})", {"/refs/2"}, status::missing, ""},
        {"a bad escape in the pointer", R"({"a~b":"x"})", {"/a~b"}, status::missing, ""},
        {"below a scalar", R"({"a":"x"})", {"/a/b"}, status::missing, ""},
        {"a string is taken as is", R"({"client_ref":"a,b%c"})", {"/client_ref"}, status::found, "a,b%c"},
        {"composite", R"({"m":"m1","o":"o1"})", {"/m", "/o"}, status::found, "m1,o1"},
        {"composite escapes its separator",
         R"({"m":"m1,o","o":"x"})",
         {"/m", "/o"},
         status::found,
         "m1%2Co,x"},
        {"composite escapes the escape",
         R"({"m":"m1%2C","o":"x"})",
         {"/m", "/o"},
         status::found,
         "m1%252C,x"},
        {"composite with a number", R"({"m":"m1","o":5})", {"/m", "/o"}, status::found, "m1,5"},
        {"composite with a fraction", R"({"m":"m1","o":1.5e3})", {"/m", "/o"}, status::found, "m1,1.5e3"},
        {"not JSON", "client_ref=c-1", {"/client_ref"}, status::not_json, ""},
        {"truncated JSON", R"({"client_ref":"c-1")", {"/client_ref"}, status::not_json, ""},
        {"two documents", R"({"client_ref":"c-1"} {})", {"/client_ref"}, status::not_json, ""},
        {"a trailing comma", R"({"client_ref":"c-1",})", {"/client_ref"}, status::not_json, ""},
        {"a number cut short", R"({"client_ref":1.})", {"/client_ref"}, status::not_json, ""},
        {"empty body", "", {"/client_ref"}, status::not_json, ""},
        {"absent", R"({"amount":1})", {"/client_ref"}, status::missing, ""},
        {"empty string", R"({"client_ref":""})", {"/client_ref"}, status::missing, ""},
        {"an object", R"({"client_ref":{"a":1}})", {"/client_ref"}, status::missing, ""},
        {"null", R"({"client_ref":null})", {"/client_ref"}, status::missing, ""},
        {"a boolean", R"({"client_ref":true})", {"/client_ref"}, status::missing, ""},
        {"a top-level array", R"(["c-1"])", {"/client_ref"}, status::missing, ""},
        {"the second of two missing", R"({"m":"m1"})", {"/m", "/o"}, status::missing, "", 1},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        std::string key = "stale";
        auto found = key_from_json(r.body, r.pointers, key);
        CHECK(found.result == r.result);
        CHECK(key == r.key);
        if (r.result == status::missing)
            CHECK(found.missing == r.missing);
    }
}

TEST_CASE("json key: a body is JSON exactly when Boost.JSON's parser takes it, nesting limit included")
{
    for (std::size_t depth = 29; depth <= 34; ++depth) {
        CAPTURE(depth);
        // An object holding depth - 1 nested arrays around the value.
        std::string body = R"({"a":)" + std::string(depth - 1, '[') + "7" + std::string(depth - 1, ']') + "}";
        std::string pointer = "/a";
        for (std::size_t i = 1; i < depth; ++i)
            pointer += "/0";
        boost::system::error_code ec;
        (void)boost::json::parse(body, ec);
        CHECK(bool(ec) == (depth > 32)); // the default max_depth
        std::string key;
        auto found = key_from_json(body, {pointer}, key);
        CHECK(found.result == (ec ? json_key::status::not_json : json_key::status::found));
        CHECK(key == (ec ? "" : "7"));
        CHECK(canonical_json(body, {}).has_value() == !ec);
    }
}
