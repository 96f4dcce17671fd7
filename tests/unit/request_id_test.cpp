// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/gateway/request_id.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace idemgate::gateway;
namespace http = boost::beast::http;

TEST_CASE("request id: 1 to 200 visible ASCII characters are kept, anything else is not")
{
    CHECK(valid_request_id("a"));
    CHECK(valid_request_id("req-42_x.Y:z/~!"));
    CHECK(valid_request_id(std::string(200, 'x')));
    CHECK_FALSE(valid_request_id(""));
    CHECK_FALSE(valid_request_id(std::string(201, 'x')));
    CHECK_FALSE(valid_request_id("has space"));
    CHECK_FALSE(valid_request_id("tab\there"));
    CHECK_FALSE(valid_request_id(std::string("nul\0x", 5)));
    CHECK_FALSE(valid_request_id("del\x7f"));
    CHECK_FALSE(valid_request_id("caf\xc3\xa9"));
}

TEST_CASE("generated request ids are 32 lower-case hex digits and do not repeat, on any thread")
{
    std::set<std::string> seen;
    for (int i = 0; i < 10000; ++i) {
        auto id = new_request_id();
        REQUIRE(id.size() == 32);
        REQUIRE(id.find_first_not_of("0123456789abcdef") == std::string::npos);
        seen.insert(id);
    }
    std::vector<std::string> other(1000);
    std::thread t([&] {
        for (auto& id : other)
            id = new_request_id();
    });
    t.join();
    seen.insert(other.begin(), other.end());
    CHECK(seen.size() == 11000);
}

TEST_CASE("traceparent: only the W3C version-00 format yields a trace id")
{
    const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const std::string good = "00-" + trace + "-00f067aa0ba902b7-01";
    CHECK(trace_id_of(good) == trace);
    CHECK(trace_id_of("00-" + trace + "-00f067aa0ba902b7-00") == trace);
    const std::string bad[] = {
        "",
        "00-" + trace + "-00f067aa0ba902b7",                       // no flags
        "00-" + trace + "-00f067aa0ba902b7-01-extra",              // version 00 has four fields
        "01-" + trace + "-00f067aa0ba902b7-01",                    // unknown version
        "ff-" + trace + "-00f067aa0ba902b7-01",                    // forbidden version
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper case
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // all-zero trace id
        "00-" + trace + "-0000000000000000-01",                    // all-zero parent id
        "00-" + trace + "-00f067aa0ba902b7-0g",                    // not hex
        "00_" + trace + "-00f067aa0ba902b7-01",                    // wrong separator
        "00-" + trace.substr(1) + "-00f067aa0ba902b7-01x",         // misaligned fields
    };
    for (const auto& tp : bad) {
        CAPTURE(tp);
        CHECK(trace_id_of(tp).empty());
    }
}

TEST_CASE("read_request_ids keeps one valid id, replaces missing, repeated or invalid ones")
{
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    {
        http::fields f;
        f.insert("X-Request-Id", "client-id-1");
        f.insert("traceparent", tp);
        auto ids = read_request_ids(f, "X-Request-Id");
        CHECK(ids.request_id == "client-id-1");
        CHECK_FALSE(ids.generated);
        CHECK(ids.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
    }
    {
        http::fields f;
        f.insert("x-request-id", "lower-case-name"); // header names are case-insensitive
        auto ids = read_request_ids(f, "X-Request-Id");
        CHECK(ids.request_id == "lower-case-name");
        CHECK(ids.trace_id.empty());
    }
    for (auto lines : std::vector<std::vector<std::string>>{{}, {"bad id"}, {"a", "b"}, {""}}) {
        http::fields f;
        for (auto& v : lines)
            f.insert("X-Request-Id", v);
        auto ids = read_request_ids(f, "X-Request-Id");
        CHECK(ids.generated);
        CHECK(ids.request_id.size() == 32);
    }
    {
        http::fields f;
        f.insert("traceparent", tp);
        f.insert("traceparent", tp); // two lines: not trusted
        CHECK(read_request_ids(f, "X-Request-Id").trace_id.empty());
    }
    {
        http::fields f;
        f.insert("X-Request-Id", "client-id-1");
        f.insert("traceparent", tp);
        auto ids = read_request_ids(f, ""); // request ids off
        CHECK(ids.request_id.empty());
        CHECK_FALSE(ids.generated);
        CHECK(ids.trace_id == "4bf92f3577b34da6a3ce929d0e0e4736");
    }
}
