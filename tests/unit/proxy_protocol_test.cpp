// SPDX-License-Identifier: Apache-2.0
// The PROXY protocol header parser (HAProxy's proxy-protocol.txt, v1 and v2): whole headers,
// every prefix of one, what follows one, and the broken ones.
#include <doctest/doctest.h>
#include <idemgate/gateway/proxy_protocol.hpp>
#include <string>

using idemgate::gateway::parse_proxy_header;
using idemgate::gateway::proxy_parse;

namespace {

const std::string v2_signature("\r\n\r\n\0\r\nQUIT\n", 12);

// A v2 header: version/command byte, family/transport byte, then `block` (addresses, TLVs).
std::string v2(unsigned char command, unsigned char family, const std::string& block)
{
    std::string out = v2_signature;
    out.push_back(static_cast<char>(command));
    out.push_back(static_cast<char>(family));
    out.push_back(static_cast<char>(block.size() >> 8));
    out.push_back(static_cast<char>(block.size() & 0xff));
    return out + block;
}

std::string bytes(std::initializer_list<int> list)
{
    std::string out;
    for (int b : list)
        out.push_back(static_cast<char>(b));
    return out;
}

// Every strict prefix of a whole header asks for more.
void prefixes_need_more(const std::string& header)
{
    for (std::size_t n = 1; n < header.size(); ++n) {
        auto r = parse_proxy_header(std::string_view(header).substr(0, n));
        CHECK_MESSAGE(r.status == proxy_parse::need_more, "prefix of ", n, " bytes");
    }
}

} // namespace

TEST_CASE("PROXY v1: TCP4, TCP6, UNKNOWN, and the stream after them")
{
    const std::string tcp4 = "PROXY TCP4 203.0.113.7 10.0.0.1 56324 443\r\n";
    auto r = parse_proxy_header(tcp4 + "GET / HTTP/1.1\r\n");
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.version == 1);
    CHECK(r.length == tcp4.size()); // exactly the header: what follows is HTTP's
    CHECK(r.source == "203.0.113.7");
    CHECK(r.source_port == 56324);
    CHECK_FALSE(r.local);
    prefixes_need_more(tcp4);

    r = parse_proxy_header("PROXY TCP6 2001:db8::1 ::1 65535 0\r\n\x16\x03\x01");
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.source == "2001:db8::1");
    CHECK(r.source_port == 65535);

    r = parse_proxy_header("PROXY UNKNOWN\r\n");
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.local);
    CHECK(r.length == 15);
    r = parse_proxy_header("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n");
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.local);

    // The longest header the specification allows is 107 bytes, CRLF included.
    const std::string longest = "PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff "
                                "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff 65535 65535\r\n";
    CHECK(longest.size() == 104);
    CHECK(parse_proxy_header(longest).status == proxy_parse::done);
    std::string unknown_107 = "PROXY UNKNOWN " + std::string(91, 'x') + "\r\n";
    CHECK(unknown_107.size() == 107);
    CHECK(parse_proxy_header(unknown_107).status == proxy_parse::done);
}

TEST_CASE("PROXY v1: broken headers are invalid")
{
    const char* bad[] = {
        "PROXY TCP4 203.0.113.7 10.0.0.1 56324 443\n",     // LF alone
        "PROXY TCP4 203.0.113.7 10.0.0.1 56324 443\r\r\n", // CR not followed by LF
        "PROXY TCP4 2001:db8::1 10.0.0.1 1 2\r\n",         // wrong family
        "PROXY TCP6 203.0.113.7 ::1 1 2\r\n",              // wrong family
        "PROXY TCP4 203.0.113.7 10.0.0.1 65536 443\r\n",   // port out of range
        "PROXY TCP4 203.0.113.7 10.0.0.1 0443 443\r\n",    // leading zero
        "PROXY TCP4 203.0.113.7 10.0.0.1 -1 443\r\n",      // sign
        "PROXY TCP4 203.0.113.7  10.0.0.1 1 443\r\n",      // two spaces
        "PROXY TCP4 203.0.113.7 10.0.0.1 1\r\n",           // a word short
        "PROXY TCP4 203.0.113.7 10.0.0.1 1 2 3\r\n",       // a word too many
        "PROXY TCP4 203.0.113.7 10.0.0.1 1 2 \r\n",        // trailing space
        "PROXY UDP4 203.0.113.7 10.0.0.1 1 2\r\n",         // unknown protocol
        "PROXY UNKNOWNX\r\n",                              // not UNKNOWN
        "PROXY \r\n",                                      // nothing
        "PROXY TCP4 203.000.113.7 10.0.0.1 1 2\r\n",       // not a dotted quad
        "proxy TCP4 203.0.113.7 10.0.0.1 1 2\r\n",         // signature is case-sensitive
        "GET / HTTP/1.1\r\n",                              // no header at all
        "PROXYTCP4\r\n",                                   // bad signature
    };
    for (const char* text : bad) {
        auto r = parse_proxy_header(std::string_view(text));
        CHECK_MESSAGE(r.status == proxy_parse::invalid, text);
        CHECK_MESSAGE(!r.problem.empty(), text);
    }
    // Oversize: 107 bytes without CRLF (or a CRLF past them) is not a v1 header.
    std::string too_long = "PROXY UNKNOWN " + std::string(93, 'x');
    CHECK(too_long.size() == 107);
    CHECK(parse_proxy_header(too_long).status == proxy_parse::invalid);
    CHECK(parse_proxy_header(too_long + "\r\n").status == proxy_parse::invalid);
    CHECK(parse_proxy_header(too_long.substr(0, 106)).status == proxy_parse::need_more);
    CHECK(parse_proxy_header(std::string_view{}).status == proxy_parse::need_more);
}

TEST_CASE("PROXY v2: IPv4, IPv6, LOCAL, UNSPEC, TLVs skipped, the stream after them")
{
    const auto ipv4 = v2(0x21, 0x11, bytes({203, 0, 113, 7, 10, 0, 0, 1, 0xdc, 0x04, 0x01, 0xbb}));
    auto r = parse_proxy_header(ipv4 + "GET / HTTP/1.1\r\n");
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.version == 2);
    CHECK(r.length == 28);
    CHECK(r.source == "203.0.113.7");
    CHECK(r.source_port == 56324);
    prefixes_need_more(ipv4);
    CHECK(parse_proxy_header(std::string_view(ipv4).substr(0, 16)).length == 28); // how much to peek

    std::string six(36, '\0');
    six[0] = 0x20;
    six[1] = 0x01;
    six[2] = 0x0d;
    six[3] = static_cast<char>(0xb8);
    six[15] = 1; // 2001:db8::1
    six[31] = 1; // ::1
    six[32] = 0x01;
    six[33] = static_cast<char>(0xbb); // 443
    // A TLV (PP2_TYPE_AUTHORITY, "example.com") after the addresses: skipped.
    const std::string tlv = bytes({0x02, 0x00, 0x0b}) + "example.com";
    const auto ipv6 = v2(0x21, 0x21, six + tlv);
    r = parse_proxy_header(ipv6 + "\x16\x03\x01");
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.length == 16 + 36 + tlv.size());
    CHECK(r.source == "2001:db8::1");
    CHECK(r.source_port == 443);
    prefixes_need_more(ipv6);

    // LOCAL (a health check of the balancer's own): the peer's address stays, the block skipped.
    r = parse_proxy_header(v2(0x20, 0x00, ""));
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.local);
    CHECK(r.length == 16);
    r = parse_proxy_header(v2(0x20, 0x11, std::string(12, '\1')));
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.local);
    // PROXY with UNSPEC: the endpoints are not told, the peer's address stays.
    r = parse_proxy_header(v2(0x21, 0x00, ""));
    REQUIRE(r.status == proxy_parse::done);
    CHECK(r.local);
}

TEST_CASE("PROXY v2: broken headers are invalid")
{
    const std::string block4 = bytes({203, 0, 113, 7, 10, 0, 0, 1, 0, 1, 0, 2});
    const std::string bad[] = {
        v2(0x11, 0x11, block4),                // version 1 in the binary format
        v2(0x31, 0x11, block4),                // version 3
        v2(0x22, 0x11, block4),                // command 2
        v2(0x21, 0x12, block4),                // UDP
        v2(0x21, 0x31, std::string(216, 'u')), // AF_UNIX
        v2(0x21, 0x41, block4),                // no such family
        v2(0x21, 0x11, block4.substr(0, 11)),  // IPv4 block too short
        v2(0x21, 0x21, std::string(35, '\0')), // IPv6 block too short
        std::string("\r\n\r\n\0\r\nQUIX\n", 12) + bytes({0x21, 0x11, 0, 12}) + block4, // bad signature
    };
    for (const auto& header : bad) {
        auto r = parse_proxy_header(header);
        CHECK(r.status == proxy_parse::invalid);
        CHECK_FALSE(r.problem.empty());
    }
    // Truncated: the length field promises more than came.
    auto truncated = v2(0x21, 0x11, block4);
    truncated.pop_back();
    auto r = parse_proxy_header(truncated);
    CHECK(r.status == proxy_parse::need_more);
    CHECK(r.length == 28);
    // The largest length field: a need for 16 + 65535 bytes, nothing more.
    r = parse_proxy_header(v2_signature + bytes({0x21, 0x11, 0xff, 0xff}));
    CHECK(r.status == proxy_parse::need_more);
    CHECK(r.length == 16 + 65535);
}

TEST_CASE("PROXY: any bytes give an answer without reading past them")
{
    // A small deterministic sweep, as the fuzz target would: every answer is in bounds.
    std::string input;
    unsigned state = 12345;
    for (int round = 0; round < 2000; ++round) {
        input.assign(round % 2 ? v2_signature : std::string("PROXY "));
        const auto extra = (state >> 8) % 120;
        for (unsigned i = 0; i < extra; ++i) {
            state = state * 1103515245 + 12345;
            input.push_back(static_cast<char>(state >> 16));
        }
        auto r = parse_proxy_header(input);
        if (r.status == proxy_parse::done)
            CHECK(r.length <= input.size());
    }
}
