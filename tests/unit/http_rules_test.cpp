// SPDX-License-Identifier: Apache-2.0
#include <cctype>
#include <doctest/doctest.h>
#include <idemgate/common/record_headers.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <string>
#include <utility>
#include <vector>

using namespace idemgate::gateway;

namespace {

http::fields make(std::vector<std::pair<std::string, std::string>> lines)
{
    http::fields f;
    for (auto& [n, v] : lines)
        f.insert(n, v);
    return f;
}

} // namespace

TEST_CASE("strict framing: every smuggling shape is refused")
{
    struct row {
        const char* name;
        std::vector<std::pair<std::string, std::string>> fields;
        unsigned version;
        const char* target;
        framing_violation expected;
    };
    const row rows[] = {
        {"plain Content-Length", {{"Host", "h"}, {"Content-Length", "3"}}, 11, "/a", framing_violation::none},
        {"plain chunked",
         {{"Host", "h"}, {"Transfer-Encoding", "chunked"}},
         11,
         "/a",
         framing_violation::none},
        {"chunked any case",
         {{"Host", "h"}, {"Transfer-Encoding", "Chunked"}},
         11,
         "/a",
         framing_violation::none},
        {"CL then TE",
         {{"Host", "h"}, {"Content-Length", "3"}, {"Transfer-Encoding", "chunked"}},
         11,
         "/a",
         framing_violation::content_length_and_transfer_encoding},
        {"TE then CL",
         {{"Host", "h"}, {"Transfer-Encoding", "chunked"}, {"Content-Length", "3"}},
         11,
         "/a",
         framing_violation::content_length_and_transfer_encoding},
        {"TE gzip, chunked",
         {{"Host", "h"}, {"Transfer-Encoding", "gzip, chunked"}},
         11,
         "/a",
         framing_violation::transfer_encoding_not_chunked},
        {"TE identity",
         {{"Host", "h"}, {"Transfer-Encoding", "identity"}},
         11,
         "/a",
         framing_violation::transfer_encoding_not_chunked},
        {"TE twice",
         {{"Host", "h"}, {"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}},
         11,
         "/a",
         framing_violation::transfer_encoding_not_chunked},
        {"TE chunked with junk",
         {{"Host", "h"}, {"Transfer-Encoding", "chunkedx"}},
         11,
         "/a",
         framing_violation::transfer_encoding_not_chunked},
        {"HTTP/1.0 with TE",
         {{"Transfer-Encoding", "chunked"}},
         10,
         "/a",
         framing_violation::transfer_encoding_in_http10},
        {"HTTP/1.0 without Host is fine", {{"Content-Length", "0"}}, 10, "/a", framing_violation::none},
        {"two equal Content-Length lines",
         {{"Host", "h"}, {"Content-Length", "3"}, {"Content-Length", "3"}},
         11,
         "/a",
         framing_violation::conflicting_content_length},
        {"Content-Length list",
         {{"Host", "h"}, {"Content-Length", "3, 4"}},
         11,
         "/a",
         framing_violation::conflicting_content_length},
        {"no Host in 1.1", {{"Content-Length", "0"}}, 11, "/a", framing_violation::missing_host},
        {"two Host lines", {{"Host", "a"}, {"Host", "b"}}, 11, "/a", framing_violation::missing_host},
        {"absolute-form target, another Host",
         {{"Host", "h"}},
         11,
         "http://evil/a",
         framing_violation::host_mismatch},
        {"absolute-form target, its Host", {{"Host", "h"}}, 11, "http://h/a", framing_violation::none},
        {"asterisk target without a method", {{"Host", "h"}}, 11, "*", framing_violation::bad_target},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        auto f = make(r.fields);
        CHECK(check_request_framing(f, r.version, r.target) == r.expected);
        if (r.expected != framing_violation::none)
            CHECK_FALSE(describe(r.expected).empty());
    }
}

TEST_CASE("hop-by-hop headers are removed, and every header Connection names")
{
    auto f = make({{"Host", "h"},
                   {"Connection", "keep-alive, X-Secret"},
                   {"Connection", "Upgrade"},
                   {"X-Secret", "s"},
                   {"Keep-Alive", "timeout=5"},
                   {"Proxy-Connection", "keep-alive"},
                   {"Proxy-Authorization", "Basic x"},
                   {"TE", "trailers"},
                   {"Trailer", "X-T"},
                   {"Transfer-Encoding", "chunked"},
                   {"Upgrade", "websocket"},
                   {"Expect", "100-continue"},
                   {"Content-Type", "application/json"},
                   {"Idempotency-Key", "k"}});
    strip_hop_by_hop(f, true);
    for (auto name : {"Connection", "X-Secret", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "TE",
                      "Trailer", "Transfer-Encoding", "Upgrade", "Expect"}) {
        CAPTURE(name);
        CHECK(f.count(name) == 0);
    }
    CHECK(f["Host"] == "h");
    CHECK(f["Content-Type"] == "application/json");
    CHECK(f["Idempotency-Key"] == "k");
}

TEST_CASE("a keep-alive token drops Keep-Alive in any spelling, and nothing else")
{
    auto f = make({{"Connection", "KEEP-ALIVE"},
                   {"keep-alive", "timeout=5"},
                   {"Keep-Alive-Extra", "kept"},
                   {"Close", "kept: not named"},
                   {"Host", "h"}});
    strip_hop_by_hop(f, false);
    CHECK(f.count("Keep-Alive") == 0);
    CHECK(f.count("Connection") == 0);
    CHECK(f["Keep-Alive-Extra"] == "kept");
    CHECK(f["Close"] == "kept: not named");
    CHECK(f["Host"] == "h");
    auto closing = make({{"Connection", "close"}, {"Close", "x"}, {"Host", "h"}});
    strip_hop_by_hop(closing, false);
    CHECK(closing.count("Close") == 0); // a token other than keep-alive names a field
    CHECK(closing["Host"] == "h");
}

TEST_CASE("every Connection line counts, even when other headers stand between them")
{
    auto f = make({{"Connection", "X-A"},
                   {"Host", "h"},
                   {"X-A", "1"},
                   {"Connection", "X-B"},
                   {"X-B", "2"},
                   {"x-b", "3"},
                   {"X-C", "4"}});
    strip_hop_by_hop(f, false);
    CHECK(f.count("X-A") == 0);
    CHECK(f.count("X-B") == 0);
    CHECK(f.count("Connection") == 0);
    CHECK(f["X-C"] == "4");
    CHECK(f["Host"] == "h");
}

TEST_CASE("Expect survives unless asked to strip it")
{
    auto f = make({{"Expect", "100-continue"}});
    strip_hop_by_hop(f, false);
    CHECK(f.count("Expect") == 1);
}

TEST_CASE("find_header counts lines case-insensitively and returns the first value")
{
    auto f = make({{"Idempotency-Key", "a"}, {"idempotency-key", "b"}, {"X", "y"}});
    auto k = find_header(f, "IDEMPOTENCY-KEY");
    CHECK(k.count == 2);
    CHECK(k.value == "a");
    CHECK(find_header(f, "missing").count == 0);
}

TEST_CASE("a replay record never keeps Set-Cookie, framing or hop-by-hop headers")
{
    for (auto n : {"Set-Cookie", "set-cookie", "Content-Length", "Transfer-Encoding", "Connection",
                   "Keep-Alive", "Upgrade", "Trailer", "TE", "Idempotent-Replayed"}) {
        CAPTURE(n);
        CHECK(idemgate::gateway::excluded_from_record(n));
    }
    for (auto n : {"Content-Type", "Location", "ETag", "X-Request-Id", "Date", "Cache-Control"}) {
        CAPTURE(n);
        CHECK_FALSE(idemgate::gateway::excluded_from_record(n));
    }
}

TEST_CASE("the record's exclusions read by field enum agree with the list for every name")
{
    namespace http = boost::beast::http;
    // Every field Beast knows, in its own spelling and upper case, and every name of the list.
    int excluded = 0;
    for (std::size_t i = 1; i <= static_cast<std::size_t>(http::field::xref); ++i) {
        const auto field = static_cast<http::field>(i);
        const std::string name(http::to_string(field));
        std::string upper = name;
        for (auto& c : upper)
            c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        CAPTURE(name);
        CHECK(idemgate::gateway::excluded_from_record(field, name) ==
              idemgate::gateway::excluded_from_record(name));
        CHECK(idemgate::gateway::excluded_from_record(field, upper) ==
              idemgate::gateway::excluded_from_record(name));
        excluded += idemgate::gateway::excluded_from_record(field, name);
    }
    // The list's names Beast knows by enum (all but the two idempotency fields).
    CHECK(excluded == 11);
    for (auto name : idemgate::record_excluded_headers) {
        CAPTURE(name);
        CHECK(idemgate::gateway::excluded_from_record(http::string_to_field(name), name));
    }
    CHECK(idemgate::gateway::excluded_from_record(http::field::unknown, "Idempotent-Replayed"));
    CHECK_FALSE(idemgate::gateway::excluded_from_record(http::field::unknown, "X-Other"));
}

TEST_CASE("standard methods must be spelled in upper case; extension methods are untouched")
{
    auto f = make({{"Host", "h"}});
    const std::pair<const char*, framing_violation> rows[] = {
        {"POST", framing_violation::none},
        {"post", framing_violation::non_canonical_method},
        {"Post", framing_violation::non_canonical_method},
        {"pAtCh", framing_violation::non_canonical_method},
        {"get", framing_violation::non_canonical_method},
        {"PURGE", framing_violation::none},
        {"purge", framing_violation::non_canonical_method}, // Beast knows PURGE
        {"frobnicate", framing_violation::none},            // not a method Beast knows
        {"", framing_violation::none},
    };
    for (auto& [method, expected] : rows) {
        CAPTURE(method);
        CHECK(check_request_framing(f, 11, "/a", method) == expected);
    }
}

TEST_CASE("Host must be one host[:port]; Connection must not name it")
{
    const std::pair<const char*, framing_violation> hosts[] = {
        {"example.com", framing_violation::none},
        {"example.com:8080", framing_violation::none},
        {"127.0.0.1", framing_violation::none},
        {"[::1]:80", framing_violation::none},
        {"", framing_violation::none}, // RFC 9112 3.2: empty when the target has no authority
        {"a.test, b.test", framing_violation::bad_host},
        {"a.test b.test", framing_violation::bad_host},
        {"user@a.test", framing_violation::bad_host},
        {"a.test/x", framing_violation::bad_host},
    };
    for (auto& [host, expected] : hosts) {
        CAPTURE(host);
        CHECK(check_request_framing(make({{"Host", host}}), 11, "/a", "GET") == expected);
    }
    CHECK(check_request_framing(make({{"Host", "h"}, {"Connection", "keep-alive, host"}}), 11, "/a", "GET") ==
          framing_violation::connection_names_host);
    CHECK(check_request_framing(make({{"Host", "h"}, {"Host", "h"}}), 10, "/a", "GET") ==
          framing_violation::bad_host);
}

TEST_CASE("connection_names finds a protected header in any Connection line, case-insensitively")
{
    const std::string_view scope[] = {"Idempotency-Key", "", "X-Tenant-ID"};
    CHECK(connection_names(make({{"Connection", "close"}}), scope).empty());
    CHECK(connection_names(make({{"Connection", "x-tenant-id"}}), scope) == "X-Tenant-ID");
    CHECK(connection_names(make({{"Connection", "close"}, {"X", "y"}, {"Connection", " idempotency-key "}}),
                           scope) == "Idempotency-Key");
    CHECK(connection_names(make({{"X-Tenant-ID", "acme"}}), scope).empty());
}

TEST_CASE("has_obs_fold finds a header line that starts with SP or HT, only in the header")
{
    CHECK_FALSE(has_obs_fold("Host: h\r\nX: y\r\n\r\n", true));
    CHECK(has_obs_fold("Host: h\r\nTransfer-Encoding:\r\n chunked\r\n\r\n", true));
    CHECK(has_obs_fold("X: a\r\n\tb\r\n\r\n", true));
    // The bytes before `pending` ended a line: a leading space is a fold; mid-line it is not.
    CHECK(has_obs_fold(" chunked\r\n\r\n", true));
    CHECK_FALSE(has_obs_fold(" chunked\r\n\r\n", false));
    // Spaces at the start of body lines are the body's business.
    CHECK_FALSE(has_obs_fold("Host: h\r\n\r\n body\r\n continued", true));
    // A fold still arriving (no empty line yet) is found as soon as its first byte is there.
    CHECK(has_obs_fold("Host: h\r\n ", true));
    // The empty line still arriving: nothing folded so far.
    CHECK_FALSE(has_obs_fold("Host: h\r\n\r", true));
    CHECK_FALSE(has_obs_fold("Host: h\r\n", true));
    // Only CRLF CRLF ends the head: a bare LF before CRLF does not, so a fold after it counts.
    CHECK(has_obs_fold("A: a\n\r\n b\r\n\r\n", true));
    CHECK(has_obs_fold("A: a\r\n\n b\r\n\r\n", true));
    CHECK_FALSE(has_obs_fold("\r\n\r\n b", false));
}
