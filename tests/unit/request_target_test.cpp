// SPDX-License-Identifier: Apache-2.0
// The request target (RFC 9112 3.2): which forms are accepted, which bytes, and how an
// absolute-form target becomes the origin-form the upstream, the routes and the fingerprint see.
#include <doctest/doctest.h>
#include <idemgate/gateway/http_rules.hpp>
#include <string>

using namespace idemgate::gateway;

TEST_CASE("request targets: origin-form, absolute-form and OPTIONS * pass; other bytes and forms do not")
{
    struct row {
        const char* target;
        const char* method;
        framing_violation expected;
        target_form form;
    };
    const row rows[] = {
        {"/a?b=c", "GET", framing_violation::none, target_form::origin},
        {"/caf%C3%A9", "GET", framing_violation::none, target_form::origin},
        {"/a|b{c}", "GET", framing_violation::none, target_form::origin}, // visible ASCII, left to the origin
        {"*", "OPTIONS", framing_violation::none, target_form::asterisk},
        {"*", "GET", framing_violation::bad_target, target_form::asterisk},
        {"http://h/a", "POST", framing_violation::none, target_form::absolute},
        {"HTTPS://h:8443", "GET", framing_violation::none, target_form::absolute},
        {"http://h?q", "GET", framing_violation::none, target_form::absolute},
        {"/caf\xc3\xa9", "GET", framing_violation::target_bytes, target_form::origin},
        {"/a?q=\xff", "GET", framing_violation::target_bytes, target_form::origin},
        {"/a\x7f", "GET", framing_violation::target_bytes, target_form::origin},
        {"/a\tb", "GET", framing_violation::target_bytes, target_form::origin},
        {"/a#b", "GET", framing_violation::target_fragment, target_form::origin},
        {"http://h/a#b", "GET", framing_violation::target_fragment, target_form::origin},
        {"http://u:p@h/a", "GET", framing_violation::target_userinfo, target_form::absolute},
        {"http://@h/a", "GET", framing_violation::target_userinfo, target_form::absolute},
        {"http:///a", "GET", framing_violation::bad_target, target_form::absolute},
        {"http://:80/a", "GET", framing_violation::bad_target, target_form::absolute},
        {"http://a,b/a", "GET", framing_violation::bad_target, target_form::absolute},
        {"http://", "GET", framing_violation::bad_target, target_form::origin},
        {"ftp://h/a", "GET", framing_violation::bad_target, target_form::origin},
        {"http:/a", "GET", framing_violation::bad_target, target_form::origin},
        {"h:443", "CONNECT", framing_violation::bad_target, target_form::origin},
        {"a/b", "GET", framing_violation::bad_target, target_form::origin},
        {"", "GET", framing_violation::bad_target, target_form::origin},
    };
    for (const auto& r : rows) {
        CAPTURE(r.target);
        auto parsed = parse_request_target(r.target, r.method);
        CHECK(parsed.violation == r.expected);
        CHECK(parsed.form == r.form);
        if (r.expected != framing_violation::none)
            CHECK_FALSE(describe(r.expected).empty());
    }
    auto parsed = parse_request_target("https://H.test:8443/p?q", "GET");
    CHECK(parsed.https);
    CHECK(parsed.authority == "H.test:8443");
    CHECK(parsed.path_and_query == "/p?q");
}

TEST_CASE("absolute-form: Host must name the same authority")
{
    struct row {
        const char* host;
        const char* target;
        framing_violation expected;
    };
    const row rows[] = {
        {"gw.test", "http://gw.test/a", framing_violation::none},
        {"GW.test", "http://gw.TEST/a", framing_violation::none},
        {"gw.test", "http://gw.test:80/a", framing_violation::none},
        {"gw.test:80", "http://gw.test/a", framing_violation::none},
        {"gw.test", "https://gw.test:443/a", framing_violation::none},
        {"gw.test:", "http://gw.test/a", framing_violation::none},
        {"gw.test", "https://gw.test:80/a", framing_violation::host_mismatch},
        {"gw.test", "http://gw.test:8080/a", framing_violation::host_mismatch},
        {"other.test", "http://gw.test/a", framing_violation::host_mismatch},
        {"", "http://gw.test/a", framing_violation::host_mismatch},
    };
    for (const auto& r : rows) {
        CAPTURE(r.host);
        CAPTURE(r.target);
        http::fields f;
        f.insert(http::field::host, r.host);
        CHECK(check_request_framing(f, 11, r.target, "GET") == r.expected);
    }
    // HTTP/1.1 still needs Host; HTTP/1.0 takes the target's authority.
    CHECK(check_request_framing(http::fields{}, 11, "http://gw.test/a", "GET") ==
          framing_violation::missing_host);
    CHECK(check_request_framing(http::fields{}, 10, "http://gw.test/a", "GET") == framing_violation::none);
}

TEST_CASE("to_origin_form: the path (\"/\" when empty) and query go upstream, the authority becomes Host")
{
    struct row {
        const char* target;
        const char* host; // "" = none sent
        const char* origin;
        const char* host_after;
    };
    const row rows[] = {
        {"http://gw.test/a/b?c=d", "gw.test", "/a/b?c=d", "gw.test"},
        {"http://gw.test", "", "/", "gw.test"},
        {"http://gw.test?x=1", "", "/?x=1", "gw.test"},
        {"HTTPS://GW.test:8443/p", "", "/p", "GW.test:8443"},
        {"http://gw.test:80/p", "gw.test", "/p", "gw.test"}, // the client's Host is kept
    };
    for (const auto& r : rows) {
        CAPTURE(r.target);
        http::request_header<> h;
        h.method(http::verb::get);
        h.target(r.target);
        if (*r.host)
            h.set(http::field::host, r.host);
        CHECK(to_origin_form(h));
        CHECK(h.target() == r.origin);
        CHECK(h[http::field::host] == r.host_after);
        CHECK(h.count(http::field::host) == 1);
    }
    for (const char* unchanged : {"/a", "*"}) {
        http::request_header<> h;
        h.method(http::verb::options);
        h.target(unchanged);
        CHECK_FALSE(to_origin_form(h));
        CHECK(h.target() == unchanged);
        CHECK(h.count(http::field::host) == 0);
    }
}

TEST_CASE("every byte value in an origin-form target: visible ASCII passes, '#' is a fragment, others are refused")
{
    for (int b = 0; b < 256; ++b) {
        CAPTURE(b);
        std::string target = "/a";
        target.push_back(static_cast<char>(b));
        target += "z";
        const auto parsed = parse_request_target(target, "GET");
        if (b == '#')
            CHECK(parsed.violation == framing_violation::target_fragment);
        else if (b > 0x20 && b < 0x7f)
            CHECK(parsed.violation == framing_violation::none);
        else
            CHECK(parsed.violation == framing_violation::target_bytes);
    }
}
