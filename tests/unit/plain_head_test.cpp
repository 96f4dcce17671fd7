// SPDX-License-Identifier: Apache-2.0
// A head of the common shape (an upstream's answer, a client's request), read without Beast's
// parser: what it reads must be exactly what Beast's parser makes of the same bytes, and every
// other head is left to Beast.
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cctype>
#include <doctest/doctest.h>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/plain_head.hpp>
#include <idemgate/gateway/response_rules.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <initializer_list>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

using namespace idemgate::gateway;

namespace {

constexpr std::size_t header_limit = 64 * 1024;
constexpr std::uint64_t max_body = 1024 * 1024;

// The same field lines, in order, with their names as sent.
template<class A, class B>
void check_same_fields(const A& plain, const B& beast)
{
    auto a = plain.begin();
    auto b = beast.begin();
    for (; a != plain.end() && b != beast.end(); ++a, ++b) {
        CHECK(a->name() == b->name());
        CHECK(a->name_string() == b->name_string());
        CHECK(a->value() == b->value());
    }
    CHECK(a == plain.end());
    CHECK(b == beast.end());
}

// `read` (which reads a head both ways and says whether the plain reader took it) on each
// one-byte change and insertion of each head, for each byte in `bytes`. Both outcomes must
// happen: many changes keep the shape (in a value, say), many do not.
template<class Read>
void check_every_variant(std::initializer_list<std::string> heads, std::string_view bytes, Read read)
{
    std::size_t taken = 0, tried = 0;
    for (const auto& head : heads) {
        for (std::size_t at = 0; at < head.size(); ++at) {
            for (char c : bytes) {
                auto changed = head;
                changed[at] = c;
                auto inserted = head;
                inserted.insert(at, 1, c);
                for (const auto* variant : {&changed, &inserted}) {
                    CAPTURE(*variant);
                    ++tried;
                    taken += read(*variant) ? 1 : 0;
                }
            }
        }
    }
    CHECK(taken > tried / 10);
    CHECK(taken < tried);
}

// Reads `head` both ways. When the plain reader takes it, Beast's parser must read the same
// status, version, reason, fields (in order, with their names as sent), Content-Length and
// keep-alive; when it does not, the message must be untouched. Returns whether it was taken.
bool read_both_ways(const std::string& head, std::uint64_t body_limit = max_body)
{
    http::response<http::string_body, span_fields> plain;
    plain_answer info;
    const bool taken = read_plain_answer(head, {header_limit, body_limit}, plain.base(), info);
    if (!taken) {
        CHECK(plain.begin() == plain.end());
        CHECK(plain.result_int() == 200); // as constructed
        CHECK(plain.version() == 11);
        return false;
    }
    http::response_parser<http::string_body> beast;
    beast.header_limit(header_limit);
    beast.body_limit(boost::none);
    boost::system::error_code ec;
    auto used = beast.put(boost::asio::buffer(head), ec);
    REQUIRE_MESSAGE(!ec, "Beast refuses a head the plain reader took: " << ec.message());
    REQUIRE(beast.is_header_done());
    CHECK(used == head.size());
    const auto& m = beast.get();
    CHECK(plain.result_int() == m.result_int());
    CHECK(plain.version() == m.version());
    CHECK(plain.reason() == m.reason());
    CHECK(beast.content_length().value_or(~0ULL) == info.content_length);
    CHECK(beast.keep_alive() == info.keep_alive);
    CHECK_FALSE(beast.chunked());
    CHECK(check_response_framing(plain.base()) == response_violation::none);
    check_same_fields(plain, m);
    return true;
}

const std::string nginx_head = "HTTP/1.1 200 OK\r\n"
                               "Server: nginx/1.22.1\r\n"
                               "Date: Fri, 04 Dec 2026 15:21:47 GMT\r\n"
                               "Content-Type: application/json\r\n"
                               "Content-Length: 17\r\n"
                               "Connection: keep-alive\r\n"
                               "\r\n";

} // namespace

TEST_CASE("plain answer head: the common shapes are read, as Beast reads them")
{
    const std::vector<std::string> taken = {
        nginx_head,
        "HTTP/1.1 201 Created\r\nX-Powered-By: Express\r\nLocation: /orders/7\r\n"
        "ETag: W/\"11-abc\"\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nConnection: close\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nProxy-Connection: CLOSE\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 \r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 422 Not Quite\tRight \r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Empty:\r\nX-Blank: \t \r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Pad:\t  padded value \t \r\ncontent-length: 0002\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Obs: caf\xc3\xa9 \xff\x80\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 599 Whatever\r\nA: 1\r\nA: 2\r\na: 3\r\nContent-Length: 1048576\r\n\r\n",
    };
    for (const auto& head : taken) {
        CAPTURE(head);
        CHECK(read_both_ways(head));
    }
    std::string long_value = "HTTP/1.1 200 OK\r\nX-Long: ";
    long_value.append(5000, 'v').append("\r\nContent-Length: 2\r\n\r\n");
    CHECK(read_both_ways(long_value));
    // The longest length read here: eighteen digits (it cannot overflow).
    CHECK(read_both_ways("HTTP/1.1 200 OK\r\nContent-Length: 999999999999999999\r\n\r\n", ~std::uint64_t{0}));
}

TEST_CASE("plain answer head: every other head is left to Beast's parser")
{
    std::string many = "HTTP/1.1 200 OK\r\n";
    for (int i = 0; i < 64; ++i)
        many += "X-F" + std::to_string(i) + ": v\r\n";
    many += "Content-Length: 2\r\n\r\n";
    const std::vector<std::string> left = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n",               // read until close
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n", // two lines
        "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: +2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 1234567890123456789\r\n\r\n",
        "HTTP/1.1 100 Continue\r\n\r\n",
        "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 199 Odd\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 600 Odd\r\nContent-Length: 2\r\n\r\n",
        "HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.2 200 OK\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200OK\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 20 OK\r\nContent-Length: 2\r\n\r\n",
        "http/1.1 200 OK\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Fold: a\r\n b\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Fold: a\r\n\tb\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Del: a\x7f\r\nContent-Length: 2\r\n\r\n",
        std::string("HTTP/1.1 200 OK\r\nX-Nul: a\0b\r\nContent-Length: 2\r\n\r\n", 51),
        "HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX-Lf: a\nb\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nName : v\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\n: v\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nX(y): v\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nConnection: upgrade\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nConnection: close, keep-alive\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n",      // no empty line
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nx", // bytes after the head
    };
    for (const auto& head : left) {
        CAPTURE(head);
        CHECK_FALSE(read_both_ways(head));
    }
    CHECK_FALSE(read_both_ways(many));
    std::string big = "HTTP/1.1 200 OK\r\nX-Big: "; // over the header limit
    big.append(header_limit, 'v').append("\r\nContent-Length: 2\r\n\r\n");
    CHECK_FALSE(read_both_ways(big));
    // A body over the caller's limit goes to Beast's parser, which reads it by pieces.
    CHECK(read_both_ways(nginx_head, 17));
    CHECK_FALSE(read_both_ways(nginx_head, 16));
}

TEST_CASE("plain answer head: a byte changed anywhere in a head is read as Beast reads it, or left to it")
{
    // Each position of two heads, each byte that matters to the grammar: whatever the plain
    // reader takes, Beast's parser reads the same way (read_both_ways checks it).
    using namespace std::string_view_literals;
    check_every_variant(
        {nginx_head, "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"},
        "\0\t :\r\n\x7f\x80"
        "a,0(kC"sv,
        [](const std::string& h) { return read_both_ways(h); });
}

namespace {

// The same for a request: method, target, version, fields, Content-Length (or none) and
// keep-alive as Beast's request parser reads them.
bool read_request_both_ways(const std::string& head, std::uint64_t body_limit = max_body)
{
    http::request<http::string_body, span_fields> plain;
    plain_request info;
    const bool taken = read_plain_request(head, {header_limit, body_limit}, plain.base(), info);
    if (!taken) {
        CHECK(plain.begin() == plain.end());
        CHECK(plain.target().empty()); // as constructed
        return false;
    }
    http::request_parser<http::string_body> beast;
    beast.header_limit(header_limit);
    beast.body_limit(body_limit);
    boost::system::error_code ec;
    auto used = beast.put(boost::asio::buffer(head), ec);
    REQUIRE_MESSAGE(!ec, "Beast refuses a head the plain reader took: " << ec.message());
    REQUIRE(beast.is_header_done());
    CHECK(used == head.size());
    const auto& m = beast.get();
    CHECK(plain.method() == m.method());
    CHECK(plain.method_string() == m.method_string());
    CHECK(plain.target() == m.target());
    CHECK(plain.version() == m.version());
    CHECK(beast.content_length().has_value() == info.content_length.has_value());
    CHECK(beast.content_length().value_or(0) == info.content_length.value_or(0));
    CHECK(beast.is_done() == (info.content_length.value_or(0) == 0));
    CHECK(beast.keep_alive() == info.keep_alive);
    CHECK_FALSE(beast.chunked());
    check_same_fields(plain, m);
    return true;
}

const std::string post_head = "POST /api/orders?x=1 HTTP/1.1\r\n"
                              "Host: 127.0.0.1:8080\r\n"
                              "Content-Type: application/json\r\n"
                              "Idempotency-Key: 3f0a8c1e-order-7\r\n"
                              "Content-Length: 17\r\n"
                              "\r\n";

} // namespace

TEST_CASE("plain request head: the common shapes are read, as Beast reads them")
{
    const std::vector<std::string> taken = {
        post_head,
        "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /x HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "GET /x HTTP/1.0\r\n\r\n",
        "DELETE /orders/7 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
        "PATCH /a%20b/~c!$&'()*+,;=:@ HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n",
        "PUT /a HTTP/1.1\r\nX-Empty:\r\nX-Pad:\t v \t\r\nX-Obs: \xc3\xa9\r\nContent-Length: 1048576\r\n\r\n",
        "OPTIONS /a HTTP/1.1\r\nHost: a\r\nHost: b\r\nhost: c\r\n\r\n",
    };
    for (const auto& head : taken) {
        CAPTURE(head);
        CHECK(read_request_both_ways(head));
    }
}

TEST_CASE("plain request head: every other head is left to Beast's parser")
{
    const std::vector<std::string> left = {
        "get / HTTP/1.1\r\nHost: a\r\n\r\n",
        "FOO / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET * HTTP/1.1\r\nHost: a\r\n\r\n",
        "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET http://a/b HTTP/1.1\r\nHost: a\r\n\r\n",
        "CONNECT a:443 HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /\xc3\xa9 HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /a\tb HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET /  HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/2.0\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1 \r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\nHost: a\r\n\r\n",
        "\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1, 1\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: 1048577\r\n\r\n", // over the body limit: Beast's 413
        "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
        "GET / HTTP/1.1\r\nX-Fold: a\r\n b\r\n\r\n",
        "GET / HTTP/1.1\r\nX-Del: \x7f\r\n\r\n",
        "GET / HTTP/1.1\r\nName : v\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\r\nx",
    };
    for (const auto& head : left) {
        CAPTURE(head);
        CHECK_FALSE(read_request_both_ways(head));
    }
}

TEST_CASE("plain request head: a byte changed anywhere in a head is read as Beast reads it, or left to it")
{
    using namespace std::string_view_literals;
    check_every_variant({post_head, "GET /a?b=c HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"},
                        "\0\t :\r\n\x7f\x80"
                        "a,0(/*G"sv,
                        [](const std::string& h) { return read_request_both_ways(h); });
}

TEST_CASE("field names: the fast lookup gives Beast's field for every name Beast knows, in any case")
{
    auto flip = [](std::string s, int how) {
        for (std::size_t i = 0; i < s.size(); ++i) {
            const auto c = static_cast<unsigned char>(s[i]);
            if (how == 1 || (how == 2 && i % 2 == 0))
                s[i] = static_cast<char>(std::toupper(c));
            else
                s[i] = static_cast<char>(std::tolower(c));
        }
        return s;
    };
    for (unsigned i = 1; i <= static_cast<unsigned>(http::field::xref); ++i) {
        const std::string name(http::to_string(static_cast<http::field>(i)));
        for (int how = 0; how < 3; ++how) {
            const auto s = flip(name, how);
            CAPTURE(s);
            CHECK(field_of_name(s) == http::string_to_field(s));
            // Each byte changed to each token byte: still Beast's answer.
            for (std::size_t at = 0; at < s.size(); ++at)
                for (char c : std::string_view("-_^~`|!aZ0")) {
                    auto changed = s;
                    changed[at] = c;
                    CHECK(field_of_name(changed) == http::string_to_field(changed));
                }
        }
    }
    CHECK(field_of_name("Idempotency-Key") == http::field::unknown);
    CHECK(field_of_name("X") == http::field::unknown);
}
