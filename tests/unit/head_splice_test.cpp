// SPDX-License-Identifier: Apache-2.0
// head_splice writes the bytes of the parsed fields whatever the received block holds: the
// received bytes are used only where they are those bytes.
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <doctest/doctest.h>
#include <functional>
#include <idemgate/gateway/head_splice.hpp>
#include <string>
#include <vector>

using namespace idemgate::gateway;
namespace http = boost::beast::http;

namespace {

http::request<http::string_body> parse(const std::string& head)
{
    http::request_parser<http::string_body> parser;
    boost::system::error_code ec;
    parser.put(boost::asio::buffer(head), ec);
    REQUIRE_FALSE(ec);
    REQUIRE(parser.is_header_done());
    return parser.release();
}

using keep_rule = std::function<bool(std::string_view name)>;

// The head as the rebuild renders it: request line, the kept fields in order, the added line.
std::string rendered(const http::request<http::string_body>& req, const keep_rule& keep)
{
    std::string out = std::string(req.method_string()) + " " + std::string(req.target()) + " HTTP/1.1\r\n";
    for (const auto& f : req)
        if (keep(f.name_string()))
            out += std::string(f.name_string()) + ": " + std::string(f.value()) + "\r\n";
    return out + "X-Added: 1\r\n\r\n";
}

std::string spliced(const http::request<http::string_body>& req, std::string_view received,
                    const keep_rule& keep)
{
    std::string out;
    head_splice s(received, out);
    s.request_line(req.method_string(), req.target());
    for (const auto& f : req) {
        if (keep(f.name_string()))
            s.keep(f.name_string(), f.value());
        else
            s.skip(f.name_string(), f.value());
    }
    std::string_view added[] = {"X-Added: ", "1", "\r\n"};
    s.add(added);
    return std::string(s.finish());
}

const keep_rule keep_all = [](std::string_view) { return true; };

} // namespace

TEST_CASE("head_splice: the received head whole when nothing changed")
{
    std::string head = "POST /a?b=1 HTTP/1.1\r\nhost: x\r\nX-MiXeD: v\r\ncontent-length: 0\r\n\r\n";
    auto req = parse(head);
    CHECK(spliced(req, head, keep_all) == head.substr(0, head.size() - 2) + "X-Added: 1\r\n\r\n");
}

TEST_CASE("head_splice: the bytes are always those of the parsed fields")
{
    struct row {
        const char* name;
        std::string head;
        std::function<void(http::request<http::string_body>&)> edit;
        keep_rule keep;
    };
    auto drop = [](std::string_view n) { return n != "Connection" && n != "X-Hop"; };
    const row rows[] = {
        {"whitespace the parser trimmed",
         "GET / HTTP/1.1\r\nHost: x\r\nX-A:   v \t\r\nX-B:w\r\n\r\n",
         {},
         keep_all},
        {"dropped lines between kept ones",
         "GET / HTTP/1.1\r\nHost: x\r\nConnection: X-Hop\r\nX-A: 1\r\nX-Hop: h\r\nX-B: 2\r\n\r\n",
         {},
         drop},
        {"a line replaced before forwarding (removed, then added last)",
         "GET / HTTP/1.1\r\nHost: x\r\nX-Request-Id: bad id\r\nX-A: 1\r\n\r\n",
         [](auto& r) { r.set("X-Request-Id", "good"); }, keep_all},
        {"a line removed before forwarding, its twin kept",
         "GET / HTTP/1.1\r\nHost: x\r\nX-D: 1\r\nX-E: 2\r\nX-D: 1\r\n\r\n",
         [](auto& r) { r.erase(r.find("X-E")); }, keep_all},
        {"HTTP/1.0: the request line is rebuilt", "GET /p HTTP/1.0\r\nX-A: 1\r\n\r\n", {}, keep_all},
        {"a rewritten target", "GET http://x/p HTTP/1.1\r\nHost: x\r\n\r\n", [](auto& r) { r.target("/p"); },
         keep_all},
        {"fields added after the received ones", "GET / HTTP/1.1\r\nHost: x\r\n\r\n",
         [](auto& r) { r.insert("X-New", "n"); }, keep_all},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        auto req = parse(r.head);
        if (r.edit)
            r.edit(req);
        auto expected = rendered(req, r.keep);
        CHECK(spliced(req, r.head, r.keep) == expected);
        CHECK(spliced(req, "", r.keep) == expected); // no received head (HTTP/2)
        // A received block that is not this request's (or is cut short) changes nothing.
        CHECK(spliced(req, "GET / HTTP/1.1\r\nHost: y\r\nX-A: 2\r\n\r\n", r.keep) == expected);
        CHECK(spliced(req, r.head.substr(0, r.head.size() - 3), r.keep) == expected);
    }
}
