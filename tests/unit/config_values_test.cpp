// SPDX-License-Identifier: Apache-2.0
// Config value parsers as tables: durations, sizes, endpoints.
#include "config_test_support.hpp"

#include <doctest/doctest.h>
#include <string>

using namespace config_test;
using namespace std::chrono_literals;

TEST_CASE("parse_duration accepts an integer with ms, s, m or h")
{
    struct row {
        const char* text;
        cfg::duration expected;
    };
    const row rows[] = {
        {"0ms", 0ms},   {"250ms", 250ms},
        {"1s", 1000ms}, {"30s", 30s},
        {"5m", 5min},   {"24h", 24h},
        {"007s", 7s},   {"9223372036854775807ms", cfg::duration{9223372036854775807LL}},
    };
    for (const auto& r : rows) {
        const std::string shown = r.text;
        CAPTURE(shown);
        auto value = cfg::parse_duration(r.text);
        REQUIRE(value.has_value());
        CHECK(*value == r.expected);
    }
}

TEST_CASE("parse_duration refuses malformed, negative, fractional and overflowing text")
{
    const char* rows[] = {"",
                          "s",
                          "30",
                          "-5s",
                          "+5s",
                          "1.5s",
                          "5 s",
                          " 5s",
                          "5s ",
                          "5S",
                          "5sec",
                          "5w",
                          "1h30m",
                          "0x10s",
                          "9223372036854775808ms",
                          "2562047788015216h",
                          "99999999999999999999999s"};
    for (const char* text : rows) {
        const std::string shown = text;
        CAPTURE(shown);
        CHECK_FALSE(cfg::parse_duration(text).has_value());
    }
}

TEST_CASE("parse_size accepts B, KiB, MiB, GiB and bare bytes")
{
    struct row {
        const char* text;
        std::size_t expected;
    };
    const row rows[] = {
        {"0", 0},
        {"512", 512},
        {"512B", 512},
        {"16KiB", 16 * 1024},
        {"1MiB", 1024 * 1024},
        {"8MiB", 8 * 1024 * 1024},
        {"1GiB", 1024ull * 1024 * 1024},
        {"18446744073709551615", 18446744073709551615ull},
    };
    for (const auto& r : rows) {
        const std::string shown = r.text;
        CAPTURE(shown);
        auto value = cfg::parse_size(r.text);
        REQUIRE(value.has_value());
        CHECK(*value == r.expected);
    }
}

TEST_CASE("parse_size refuses other units, signs, fractions and overflow")
{
    const char* rows[] = {"",
                          "B",
                          "MiB",
                          "1MB",
                          "1KB",
                          "1k",
                          "1mib",
                          "1 MiB",
                          "-1",
                          "+1",
                          "1.5MiB",
                          "1TiB",
                          "0x10",
                          "18446744073709551616",
                          "17179869184GiB"};
    for (const char* text : rows) {
        const std::string shown = text;
        CAPTURE(shown);
        CHECK_FALSE(cfg::parse_size(text).has_value());
    }
}

TEST_CASE("parse_endpoint splits host and port")
{
    struct row {
        const char* text;
        const char* host;
        std::uint16_t port;
    };
    const row rows[] = {
        {"127.0.0.1:8080", "127.0.0.1", 8080},
        {"localhost:0", "localhost", 0},
        {"redis.internal:65535", "redis.internal", 65535},
        {"[::1]:80", "::1", 80},
        {"my_host-1:6379", "my_host-1", 6379},
    };
    for (const auto& r : rows) {
        const std::string shown = r.text;
        CAPTURE(shown);
        auto value = cfg::parse_endpoint(r.text);
        REQUIRE(value.has_value());
        CHECK(value->host == r.host);
        CHECK(value->port == r.port);
    }
}

TEST_CASE("parse_endpoint refuses a missing host or port, bad ports and bare IPv6")
{
    const char* rows[] = {"",           "localhost",  ":8080",    "localhost:",
                          "host:65536", "host:70000", "host:-1",  "host:+80",
                          "host:0x50",  "host:80a",   "::1:80",   "[::1]80",
                          "[::1]",      "[]:80",      "ho st:80", "host:99999999999999999999999",
                          "host/x:80"};
    for (const char* text : rows) {
        const std::string shown = text;
        CAPTURE(shown);
        CHECK_FALSE(cfg::parse_endpoint(text).has_value());
    }
}

TEST_CASE("admin.shadow_window: whole minutes from 1m to 24h, reloadable, printed back")
{
    CHECK(cfg::parse(minimal, no_env).admin.shadow_window == 1h);
    auto c = cfg::parse(minimal + "admin:\n  shadow_window: 15m\n", no_env);
    CHECK(c.admin.shadow_window == 15min);
    CHECK(cfg::parse(cfg::print_config(c), no_env).admin.shadow_window == 15min);
    CHECK(cfg::parse(minimal + "admin:\n  shadow_window: 1m\n", no_env).admin.shadow_window == 1min);
    CHECK(cfg::parse(minimal + "admin:\n  shadow_window: 24h\n", no_env).admin.shadow_window == 24h);
    CHECK(cfg::parse(minimal + "admin:\n  shadow_window: 120s\n", no_env).admin.shadow_window == 2min);
    for (const char* text : {"90s", "0m", "30s", "1500ms", "25h", "2d", "soon", "-5m", "\"\""}) {
        const std::string shown = text;
        CAPTURE(shown);
        const std::string quoted = shown == "\"\"" ? "\"\"" : "\"" + shown + "\"";
        CHECK(joined(problems_of(minimal + "admin:\n  shadow_window: " + shown + "\n")) ==
              "admin.shadow_window: " + quoted + " must be whole minutes from 1m to 24h");
    }
    bool described = false;
    for (const auto& k : cfg::describe_keys())
        if (k.path == "admin.shadow_window") {
            described = true;
            CHECK_FALSE(k.restart_only);
        }
    CHECK(described);
}
