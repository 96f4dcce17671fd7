// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/gateway/fingerprint.hpp>

using idemgate::gateway::fingerprint;

TEST_CASE("fingerprint is SHA-256 of method, target and body joined by newlines")
{
    // sha256("POST\n/api/v1/orders\n{\"a\":1}") computed independently with sha256sum.
    CHECK(fingerprint("POST", "/api/v1/orders", "{\"a\":1}") ==
          "d00ada8794e63f156c9a23e546ec5ededbb1c3cec408b64d23ef42fa4633bf81");
}

TEST_CASE("fingerprint separates method, target, query and body")
{
    auto base = fingerprint("POST", "/a", "x");
    CHECK(base.size() == 64);
    CHECK(fingerprint("POST", "/a", "x") == base);
    CHECK(fingerprint("PATCH", "/a", "x") != base);
    CHECK(fingerprint("POST", "/a?x", "") != fingerprint("POST", "/a", "x"));
    CHECK(fingerprint("POST", "/a?q=1", "x") != base);
    CHECK(fingerprint("POST", "/a", "x ") != base);
    CHECK(fingerprint("POST", "/a", "") != fingerprint("POST", "/a", std::string_view("\0", 1)));
}

namespace {

idemgate::config::fingerprint_config options_with(bool query, std::vector<std::string> headers,
                                                  idemgate::config::json_mode json,
                                                  std::vector<std::string> ignore = {})
{
    idemgate::config::fingerprint_config o;
    o.query = query;
    o.headers = std::move(headers);
    o.json = json;
    o.ignore_json_fields = std::move(ignore);
    return o;
}

} // namespace

TEST_CASE("default fingerprint options give the plain fingerprint, so old records still match")
{
    boost::beast::http::fields f;
    idemgate::config::fingerprint_config defaults;
    CHECK(fingerprint({"POST", "/a?q=1", "{}"}, defaults, f) == fingerprint("POST", "/a?q=1", "{}"));
}

TEST_CASE("canonical JSON sorts keys, drops whitespace and keeps array order and number spelling")
{
    using idemgate::gateway::canonical_json;
    CHECK(canonical_json(R"( { "b" : 1, "a" : { "d" : [3, 1], "c" : "x" } } )", {}) ==
          R"({"a":{"c":"x","d":[3,1]},"b":1})");
    CHECK(canonical_json(R"({"s":"\u00e9\n"})", {}) == canonical_json("{\"s\":\"\xc3\xa9\\n\"}", {}));
    CHECK(canonical_json("[1, 2", {}) == std::nullopt);
    CHECK(canonical_json("{} {}", {}) == std::nullopt);
    CHECK(canonical_json("1", {}) == "1");
}

// Canonical texts and fingerprints of bodies whose numbers are integers within 64 bits, as the
// Boost.JSON DOM made them: they must not change, or every record made under json: canonical
// would stop matching its retries. The hashes are computed independently (sha256 of the framed
// parts: "<size>:<bytes>" for the options, method, target and canonical text, "j" before it).
TEST_CASE("canonical JSON without fractions or exponents keeps its earlier text and fingerprint")
{
    using idemgate::gateway::canonical_json;
    // Every escape the serialiser writes; other characters, U+2028 and DEL included, as UTF-8.
    CHECK(canonical_json(
              R"({"z":[true,false,null],"a":"\u0000\u001f\b\t\n\f\r\"\\\/\u007f\u00e9\ud83d\ude00 \u2028"})",
              {}) ==
          "{\"a\":\"\\u0000\\u001f\\b\\t\\n\\f\\r\\\"\\\\/\x7f\xc3\xa9\xf0\x9f\x98\x80 \xe2\x80\xa8\","
          "\"z\":[true,false,null]}");
    CHECK(canonical_json(R"({"n":[0,-1,9223372036854775807,-9223372036854775808,18446744073709551615,42]})",
                         {}) ==
          R"({"n":[0,-1,9223372036854775807,-9223372036854775808,18446744073709551615,42]})");
    // Keys by their bytes: "" < "B" < "a" < "aa" < "b" < "é".
    CHECK(canonical_json("{\"b\":1,\"B\":2,\"\xc3\xa9\":3,\"a\":4,\"\":5,\"aa\":6}", {}) ==
          "{\"\":5,\"B\":2,\"a\":4,\"aa\":6,\"b\":1,\"\xc3\xa9\":3}");
    // A duplicate key: the last one counts, and an ignored field goes with all its duplicates.
    CHECK(canonical_json(R"({"a":1,"b":2,"a":{"x":3,"x":4}})", {}) == R"({"a":{"x":4},"b":2})");
    CHECK(canonical_json(R"({"a":1,"a":2,"b":3})", {"/a"}) == R"({"b":3})");
    CHECK(canonical_json(R"({"m":{"t":1},"m":{"t":2,"k":5}})", {"/m/t"}) == R"({"m":{"k":5}})");
    // An array element removed shifts the next ones: the same pointer twice removes two.
    CHECK(canonical_json(R"({"l":[1,2,3]})", {"/l/0", "/l/0"}) == R"({"l":[3]})");
    CHECK(canonical_json(R"({"a/b":{"":1,"c":2}})", {"/a~1b/"}) == R"({"a/b":{"c":2}})");
    // A lone surrogate is not JSON.
    CHECK(canonical_json(R"("\ud800")", {}) == std::nullopt);

    boost::beast::http::fields none;
    auto canonical = options_with(true, {}, idemgate::config::json_mode::canonical);
    CHECK(fingerprint({"POST", "/p", R"( { "b":2, "a":[1,"x"] } )"}, canonical, none) ==
          "604950e856d4182cc878ea3e9b39d7bcc27811e8175e7fa7f2f2224c1666b977");
    auto ignoring = options_with(true, {}, idemgate::config::json_mode::canonical, {"/t"});
    CHECK(fingerprint({"POST", "/p", R"({"t":5,"a":{"c":"\n"}})"}, ignoring, none) ==
          "1c571ba7045c48686fe15fc818d10cdbccb539b20bfe84fc127ab0d7cb983c30");
}

TEST_CASE("canonical JSON keeps every number's source text, so different spellings are different requests")
{
    using idemgate::gateway::canonical_json;
    using idemgate::gateway::fingerprint;
    // Beyond a double's range: kept as written, never "Infinity".
    CHECK(canonical_json(R"({"a":1e400})", {}) == R"({"a":1e400})");
    CHECK(canonical_json(R"([1,[-2e999]])", {}) == R"([1,[-2e999]])");
    CHECK(canonical_json(R"({"a":1.5e308})", {}) == R"({"a":1.5e308})");
    CHECK(canonical_json(R"({"a":[1.0, 1e2, 2.5E+3, -0, -0.0, 0e0]})", {}) ==
          R"({"a":[1.0,1e2,2.5E+3,-0,-0.0,0e0]})");
    // Read as a double this number did not come back to the same text; as text it is a fixpoint.
    const std::string rounded = R"({"n":88888880000000000000008991356044281235})";
    CHECK(canonical_json(rounded, {}) == rounded);

    boost::beast::http::fields f;
    idemgate::config::fingerprint_config options;
    options.json = idemgate::config::json_mode::canonical;
    auto fp = [&](const std::string& body) { return fingerprint({"POST", "/p", body}, options, f); };
    // Integers past 64 bits that one double would hold, differing in the last digit (hashes
    // computed independently, as above).
    CHECK(fp(R"({"account":18446744073709551616})") ==
          "ff64553e4dcfb964656358daece26e389e6038eb844a23a85e6f36568c7d00c4");
    CHECK(fp(R"({"account":18446744073709551617})") ==
          "adfff65d27875c4d772fa0f61c55ec5f6d91983876e9e24aea430acff6e46c56");
    CHECK(fp(R"({"amount":1.50})") == "33db6f6d38e8d1bceec3c1c4df822615a363bd4115bb4d8fa725c1a0114c620d");
    const std::vector<std::string> spellings{
        R"({"a":1e2})",   R"({"a":100})",  R"({"a":1.0})", R"({"a":1})",
        R"({"a":-0})",    R"({"a":0})",    R"({"a":0.3})", R"({"a":0.30000000000000001})",
        R"({"a":1e400})", R"({"a":2e400})"};
    for (std::size_t i = 0; i < spellings.size(); ++i) {
        CAPTURE(spellings[i]);
        CHECK(fp(spellings[i]) == fp(spellings[i]));
        for (std::size_t j = i + 1; j < spellings.size(); ++j)
            CHECK(fp(spellings[i]) != fp(spellings[j]));
    }
    // Whitespace and key order still do not matter around them.
    CHECK(fp(R"({"b":1.0,"a":1e400})") == fp("{ \"a\" : 1e400 ,\n \"b\" : 1.0 }"));
}

TEST_CASE("ignored JSON fields are removed by pointer, including escaped and nested ones")
{
    using idemgate::gateway::canonical_json;
    CHECK(canonical_json(R"({"a":1,"t":2})", {"/t"}) == R"({"a":1})");
    CHECK(canonical_json(R"({"m":{"t":2,"k":1}})", {"/m/t"}) == R"({"m":{"k":1}})");
    CHECK(canonical_json(R"({"a/b":1,"c~d":2,"e":3})", {"/a~1b", "/c~0d"}) == R"({"e":3})");
    CHECK(canonical_json(R"({"l":[{"t":1},{"t":2}]})", {"/l/1/t"}) == R"({"l":[{"t":1},{}]})");
    CHECK(canonical_json(R"({"a":1})", {"/missing/deeper", "/a/x"}) == R"({"a":1})");
}

TEST_CASE("fingerprint options select what is hashed")
{
    using idemgate::config::json_mode;
    boost::beast::http::fields json_type;
    json_type.insert("Content-Type", "application/json");
    boost::beast::http::fields text_type;
    text_type.insert("Content-Type", "text/plain");
    boost::beast::http::fields none;

    auto canonical = options_with(true, {}, json_mode::canonical);
    CHECK(fingerprint({"POST", "/a", R"({"a":1,"b":2})"}, canonical, none) ==
          fingerprint({"POST", "/a", "{ \"b\":2, \"a\":1 }"}, canonical, none));
    // The options are hashed in: canonical never matches a raw fingerprint of the same bytes.
    CHECK(fingerprint({"POST", "/a", R"({"a":1})"}, canonical, none) !=
          fingerprint("POST", "/a", R"({"a":1})"));
    // Malformed JSON is hashed raw, and differs from any canonical document.
    CHECK(fingerprint({"POST", "/a", "{bad"}, canonical, none) !=
          fingerprint({"POST", "/a", "{bad "}, canonical, none));

    auto no_query = options_with(false, {}, json_mode::raw);
    CHECK(fingerprint({"POST", "/a?x=1", "b"}, no_query, none) ==
          fingerprint({"POST", "/a?x=2", "b"}, no_query, none));
    CHECK(fingerprint({"POST", "/a?x=1", "b"}, no_query, none) !=
          fingerprint({"POST", "/b?x=1", "b"}, no_query, none));

    auto typed = options_with(true, {"Content-Type"}, json_mode::raw);
    CHECK(fingerprint({"POST", "/a", "b"}, typed, json_type) !=
          fingerprint({"POST", "/a", "b"}, typed, text_type));
    CHECK(fingerprint({"POST", "/a", "b"}, typed, json_type) ==
          fingerprint({"POST", "/a", "b"}, typed, json_type));
    boost::beast::http::fields empty_type;
    empty_type.insert("Content-Type", "");
    CHECK(fingerprint({"POST", "/a", "b"}, typed, none) !=
          fingerprint({"POST", "/a", "b"}, typed, empty_type));
}
