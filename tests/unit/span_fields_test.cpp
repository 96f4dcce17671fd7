// SPDX-License-Identifier: Apache-2.0
// span_fields against basic_fields: the same lines in the same order after the
// same edits, the same lookups, and what Beast's message and parser make of
// them.
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <doctest/doctest.h>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/plain_head.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <idemgate/gateway/span_parser.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

using namespace idemgate::gateway;
namespace http = boost::beast::http;

namespace {

using field_line = std::tuple<http::field, std::string, std::string>;

template<class Fields>
std::vector<field_line> lines_in_order(const Fields& f)
{
    std::vector<field_line> out;
    for (const auto& line : f)
        out.emplace_back(line.name(), std::string(line.name_string()), std::string(line.value()));
    return out;
}

// Every lookup of `name` the same on both.
void check_same_lookups(const http::fields& beast, const span_fields& spans, std::string_view name)
{
    CAPTURE(name);
    CHECK(spans.count(name) == beast.count(name));
    CHECK(spans[name] == beast[name]);
    CHECK((spans.find(name) == spans.end()) == (beast.find(name) == beast.end()));
    std::vector<std::string> a, b;
    for (auto [it, last] = spans.equal_range(name); it != last; ++it)
        a.emplace_back(it->value());
    for (auto [it, last] = beast.equal_range(name); it != last; ++it)
        b.emplace_back(it->value());
    CHECK(a == b);
    const auto f = http::string_to_field(name);
    if (f != http::field::unknown) {
        CHECK(spans.count(f) == beast.count(f));
        CHECK(spans[f] == beast[f]);
        std::vector<std::string> c;
        for (auto [it, last] = spans.equal_range(f); it != last; ++it)
            c.emplace_back(it->value());
        CHECK(c == b);
    }
}

const std::vector<std::string> edit_names = {
    "Host",    "host",   "HOST",           "Set-Cookie", "set-cookie", "X-Custom", "x-CUSTOM",
    "X-Other", "Accept", "Content-Length", "Connection", "X-A",        "x-a",      "Via"};
const std::vector<std::string> edit_values = {
    "", "1", "  padded\t ", "caf\xc3\xa9 \xff\x80", "a, b", std::string(300, 'v'), "\tx"};

} // namespace

TEST_CASE("span fields: the same lines as basic_fields after the same edits, "
          "in the same order")
{
    std::mt19937 rng(49);
    for (int round = 0; round < 200; ++round) {
        http::fields beast;
        span_fields spans;
        for (int step = 0; step < 40; ++step) {
            const auto& name = edit_names[rng() % edit_names.size()];
            const auto& value = edit_values[rng() % edit_values.size()];
            const auto f = http::string_to_field(name);
            CAPTURE(round);
            CAPTURE(step);
            CAPTURE(name);
            switch (rng() % 9) {
            case 0:
            case 1:
            case 2:
                // A repeated name goes after its name's last line, as in basic_fields.
                beast.insert(name, value);
                spans.insert(name, value);
                break;
            case 3:
                if (f != http::field::unknown) {
                    beast.insert(f, value);
                    spans.insert(f, value);
                }
                break;
            case 4:
                beast.set(name, value);
                spans.set(name, value);
                break;
            case 5:
                if (f != http::field::unknown) {
                    beast.set(f, value);
                    spans.set(f, value);
                }
                break;
            case 6: CHECK(spans.erase(name) == beast.erase(name)); break;
            case 7: {
                // The n-th line by position.
                const auto n = std::distance(beast.begin(), beast.end());
                if (n == 0)
                    break;
                const auto k = static_cast<long>(rng() % static_cast<unsigned>(n));
                auto bi = beast.erase(std::next(beast.begin(), k));
                auto si = spans.erase(std::next(spans.begin(), k));
                CHECK((bi == beast.end()) == (si == spans.end()));
                if (bi != beast.end() && si != spans.end())
                    CHECK(bi->value() == si->value());
                break;
            }
            default:
                if (f != http::field::unknown)
                    CHECK(spans.erase(f) == beast.erase(f));
                break;
            }
            REQUIRE(lines_in_order(spans) == lines_in_order(beast));
            CHECK(spans.size() == lines_in_order(beast).size());
        }
        for (const auto& name : edit_names)
            check_same_lookups(beast, spans, name);
        check_same_lookups(beast, spans, "X-Absent");
    }
}

TEST_CASE("span fields: copies and moves keep their lines; a copy is independent")
{
    span_fields a;
    a.insert("Host", "example.test");
    a.insert("X-Long", std::string(1000, 'x'));
    a.insert("host", "second");
    span_fields copy = a;
    a.set(http::field::host, "changed");
    a.erase("X-Long");
    CHECK(copy.count(http::field::host) == 2);
    CHECK(copy["X-LONG"] == std::string(1000, 'x'));
    CHECK(a[http::field::host] == "changed");
    CHECK(a.size() == 1);

    span_fields moved = std::move(copy);
    CHECK(moved.size() == 3);
    CHECK(copy.size() == 0); // NOLINT: a moved-from span_fields is empty
    CHECK(copy.begin() == copy.end());
    copy = moved; // a moved-from object can be assigned
    CHECK(lines_in_order(copy) == lines_in_order(moved));
    copy = std::move(moved);
    CHECK(copy.size() == 3);
    swap(copy, a);
    CHECK(a.size() == 3);
    CHECK(copy.size() == 1);
    CHECK_THROWS_AS((void)copy.at("X-Absent"), std::out_of_range);
    CHECK(copy.at(http::field::host) == "changed");
}

TEST_CASE("span fields: erasing a line keeps the iterators to the others")
{
    span_fields f;
    for (auto n : {"A", "Connection", "B", "C"})
        f.insert(n, n);
    auto connection = f.find(http::field::connection);
    auto b = f.find("b");
    f.erase(f.find("A"));
    f.erase(b);
    CHECK(connection->value() == "Connection");
    f.erase(connection);
    CHECK(lines_in_order(f) == std::vector<field_line>{{http::field::unknown, "C", "C"}});
}

TEST_CASE("span fields: a value taken from the fields themselves survives the "
          "block moving")
{
    span_fields f;
    f.insert("X-Source", std::string(200, 's'));
    for (int i = 0; i < 20; ++i)
        f.insert("X-Copy",
                 f["X-Source"]); // each insert may move the block the view points into
    CHECK(f.count("x-copy") == 20);
    for (auto [it, last] = f.equal_range("X-Copy"); it != last; ++it)
        CHECK(it->value() == std::string(200, 's'));
}

TEST_CASE("span fields: a head of 64 fields read by the plain reader, then "
          "edited, as in basic_fields")
{
    std::string head = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 63; ++i)
        head += "X-Field-" + std::to_string(i % 20) + ": value \xe9 " + std::to_string(i) + "\r\n";
    head += "Content-Length: 2\r\n\r\n";
    http::response<http::string_body, span_fields> spans;
    http::response<http::string_body> beast;
    plain_answer a, b;
    REQUIRE(read_plain_answer(head, {64 * 1024, 1024}, spans.base(), a));
    REQUIRE(read_plain_answer(head, {64 * 1024, 1024}, beast.base(), b));
    CHECK(std::distance(spans.begin(), spans.end()) == 64);
    CHECK(lines_in_order(spans.base()) == lines_in_order(beast.base()));
    CHECK(spans.reason() == "OK");
    // Edits after the read move the block: every line, the reason too, stays.
    for (int i = 0; i < 30; ++i) {
        spans.set("X-Added-" + std::to_string(i), std::string(50, 'a'));
        beast.set("X-Added-" + std::to_string(i), std::string(50, 'a'));
        spans.insert("X-Field-3", "more");
        beast.insert("X-Field-3", "more");
    }
    spans.erase("x-field-7");
    beast.erase("x-field-7");
    CHECK(lines_in_order(spans.base()) == lines_in_order(beast.base()));
    CHECK(spans.reason() == "OK");
    for (const auto& [f, name, value] : lines_in_order(beast.base()))
        check_same_lookups(beast.base(), spans.base(), name);
}

TEST_CASE("span fields: Beast's message members read and write the framing "
          "fields as with basic_fields")
{
    http::request<http::string_body, span_fields> spans{http::verb::post, "/orders", 11};
    http::request<http::string_body> beast{http::verb::post, "/orders", 11};
    auto same = [&] {
        CHECK(lines_in_order(spans.base()) == lines_in_order(beast.base()));
        CHECK(spans.keep_alive() == beast.keep_alive());
        CHECK(spans.chunked() == beast.chunked());
        CHECK(spans.has_content_length() == beast.has_content_length());
        CHECK(spans.target() == beast.target());
        CHECK(spans.method_string() == beast.method_string());
    };
    same();
    spans.body() = beast.body() = "{}";
    spans.prepare_payload();
    beast.prepare_payload();
    same();
    spans.keep_alive(false);
    beast.keep_alive(false);
    same();
    spans.set(http::field::transfer_encoding, "gzip");
    beast.set(http::field::transfer_encoding, "gzip");
    spans.chunked(true);
    beast.chunked(true);
    same();
    spans.chunked(false);
    beast.chunked(false);
    same();
    spans.version(10);
    beast.version(10);
    spans.keep_alive(true);
    beast.keep_alive(true);
    same();
    spans.content_length(boost::none);
    beast.content_length(boost::none);
    spans.method_string("PURGE");
    beast.method_string("PURGE");
    spans.target("/x?y");
    beast.target("/x?y");
    same();
}

TEST_CASE("span fields: Beast's parser reads a head of another shape into them "
          "as into basic_fields")
{
    const std::string head = "POST /a HTTP/1.1\r\nHost: a\r\nX-Fold: one\r\n "
                             "two\r\nSet-Cookie: 1\r\nX: y\r\n"
                             "set-cookie: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "2\r\nhi\r\n0\r\nTrailer-Field: t\r\n\r\n";
    span_request_parser<http::string_body> spans;
    http::request_parser<http::string_body> beast;
    auto parse_all = [](auto& parser, std::string_view bytes) {
        parser.eager(true);
        boost::system::error_code ec;
        while (!bytes.empty() && !parser.is_done() && !ec)
            bytes.remove_prefix(parser.put(boost::asio::buffer(bytes.data(), bytes.size()), ec));
        return ec;
    };
    CHECK(parse_all(spans, head) == parse_all(beast, head));
    REQUIRE(spans.is_done());
    CHECK(spans.get().body() == "hi");
    CHECK(lines_in_order(spans.get().base()) ==
          lines_in_order(beast.get().base())); // trailer fields too, as Beast 1.81 adds them
    CHECK(spans.get().chunked());
    CHECK(check_request_framing(spans.get(), 11, "/a", "POST") ==
          check_request_framing(beast.get(), 11, "/a", "POST"));
    // Moved into a parser of another body, as the gateway does for an answer it
    // passes on.
    span_request_parser<http::string_body> span_head;
    http::request_parser<http::string_body> beast_head;
    boost::system::error_code a, b;
    span_head.put(boost::asio::buffer(head), a); // not eager: the head only
    beast_head.put(boost::asio::buffer(head), b);
    REQUIRE(span_head.is_header_done());
    CHECK(a == b);
    span_request_parser<http::buffer_body> span_body(std::move(span_head));
    http::request_parser<http::buffer_body> beast_body(std::move(beast_head));
    CHECK(lines_in_order(span_body.get().base()) == lines_in_order(beast_body.get().base()));
    CHECK(span_body.get().target() == "/a");
}

TEST_CASE("span fields: names and values read before the block is outgrown stay valid")
{
    span_fields f;
    f.insert("X-First", "first value");
    const auto name = f.begin()->name_string();
    const auto value = f["x-first"];
    for (int i = 0; i < 50; ++i)
        f.insert("X-More-" + std::to_string(i), std::string(100, 'm'));
    f.set(http::field::host, "h");
    CHECK(name == "X-First");
    CHECK(value == "first value");
    CHECK(f.size() == 52);
}

TEST_CASE("span fields: Beast's parser puts a head of many repeated names in basic_fields' order")
{
    std::mt19937 rng(7);
    std::string head = "GET / HTTP/1.1\r\n";
    for (int i = 0; i < 3000; ++i) {
        const auto& name = edit_names[rng() % edit_names.size()];
        if (http::string_to_field(name) != http::field::content_length) // one at most
            head += name + ": " + std::to_string(i) + "\r\n";
    }
    head += "\r\n";
    span_request_parser<http::string_body> spans;
    http::request_parser<http::string_body> beast;
    spans.header_limit(1024 * 1024);
    beast.header_limit(1024 * 1024);
    boost::system::error_code a, b;
    spans.put(boost::asio::buffer(head), a);
    beast.put(boost::asio::buffer(head), b);
    REQUIRE_MESSAGE(!a, a.message());
    REQUIRE_MESSAGE(!b, b.message());
    CHECK(lines_in_order(spans.get().base()) == lines_in_order(beast.get().base()));
}
