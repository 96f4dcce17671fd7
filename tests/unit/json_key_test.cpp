// SPDX-License-Identifier: Apache-2.0
// Keys from a JSON body, as a table.
#include <doctest/doctest.h>
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
        {"not JSON", "client_ref=c-1", {"/client_ref"}, status::not_json, ""},
        {"truncated JSON", R"({"client_ref":"c-1")", {"/client_ref"}, status::not_json, ""},
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
