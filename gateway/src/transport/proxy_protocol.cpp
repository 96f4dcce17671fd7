// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <arpa/inet.h>
#include <charconv>
#include <cstring>
#include <idemgate/gateway/proxy_protocol.hpp>
#include <netinet/in.h>

namespace idemgate::gateway {

namespace {

constexpr std::string_view v1_signature = "PROXY ";
constexpr unsigned char v2_signature[12] = {0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D,
                                            0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A};

proxy_header invalid(int version, std::string_view why)
{
    proxy_header out;
    out.status = proxy_parse::invalid;
    out.version = version;
    out.problem = why;
    return out;
}

// `what` (the bytes so far) is a prefix of `signature`, or `signature` a prefix of it.
bool agrees(std::span<const unsigned char> bytes, std::span<const unsigned char> signature)
{
    const auto n = std::min(bytes.size(), signature.size());
    return std::equal(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(n), signature.begin());
}

// The next space-separated word of a v1 line; false when there is none.
bool next_word(std::string_view& rest, std::string_view& word, bool last)
{
    const auto space = rest.find(' ');
    if (last) {
        if (space != std::string_view::npos || rest.empty())
            return false;
        word = rest;
        rest = {};
        return true;
    }
    if (space == std::string_view::npos || space == 0)
        return false;
    word = rest.substr(0, space);
    rest.remove_prefix(space + 1);
    return true;
}

// A v1 address of `family`, as text (inet_pton: strict dotted quads, RFC 4291 IPv6).
bool v1_address(std::string_view word, int family)
{
    char buffer[INET6_ADDRSTRLEN];
    if (word.size() >= sizeof buffer)
        return false;
    std::memcpy(buffer, word.data(), word.size());
    buffer[word.size()] = '\0';
    unsigned char address[sizeof(in6_addr)];
    return inet_pton(family, buffer, address) == 1;
}

// A v1 port: 0 to 65535 in decimal, no sign, no leading zero.
bool v1_port(std::string_view word, std::uint16_t& out)
{
    unsigned value = 0;
    if (word.empty() || word.size() > 5 || (word.size() > 1 && word.front() == '0'))
        return false;
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    if (ec != std::errc{} || end != word.data() + word.size() || value > 65535)
        return false;
    out = static_cast<std::uint16_t>(value);
    return true;
}

proxy_header parse_v1(std::string_view text)
{
    // "PROXY TCP4 <src> <dst> <sport> <dport>\r\n", "PROXY TCP6 ...", or "PROXY UNKNOWN...\r\n".
    const auto seen = text.substr(0, proxy_v1_max);
    const auto cr = seen.find('\r');
    if (cr == std::string_view::npos || cr + 1 == seen.size()) {
        if (seen.size() >= proxy_v1_max)
            return invalid(1, "a v1 header is at most 107 bytes");
        if (seen.find('\n') != std::string_view::npos)
            return invalid(1, "a v1 header ends with CRLF");
        proxy_header more;
        more.version = 1;
        return more;
    }
    if (seen[cr + 1] != '\n')
        return invalid(1, "a v1 header ends with CRLF");
    proxy_header out;
    out.version = 1;
    out.length = cr + 2;
    auto line = seen.substr(v1_signature.size(), cr - v1_signature.size());
    if (line.find('\n') != std::string_view::npos)
        return invalid(1, "a v1 header ends with CRLF");
    if (line.starts_with("UNKNOWN")) {
        // The balancer does not know (or tell) the endpoints: the peer's address stays.
        if (line.size() > 7 && line[7] != ' ')
            return invalid(1, "unknown v1 protocol");
        out.status = proxy_parse::done;
        out.local = true;
        return out;
    }
    std::string_view protocol, source, destination, source_port, destination_port;
    if (!next_word(line, protocol, false))
        return invalid(1, "malformed v1 header");
    int family = 0;
    if (protocol == "TCP4")
        family = AF_INET;
    else if (protocol == "TCP6")
        family = AF_INET6;
    else
        return invalid(1, "unknown v1 protocol (TCP4, TCP6 or UNKNOWN)");
    std::uint16_t ignored = 0;
    if (!next_word(line, source, false) || !next_word(line, destination, false) ||
        !next_word(line, source_port, false) || !next_word(line, destination_port, true))
        return invalid(1, "malformed v1 header");
    if (!v1_address(source, family) || !v1_address(destination, family))
        return invalid(1, "a v1 address is not of the protocol's family");
    if (!v1_port(source_port, out.source_port) || !v1_port(destination_port, ignored))
        return invalid(1, "a v1 port is not 0 to 65535");
    out.status = proxy_parse::done;
    out.source = std::string(source);
    return out;
}

proxy_header parse_v2(std::span<const unsigned char> bytes)
{
    if (bytes.size() < proxy_v2_fixed) {
        proxy_header more;
        more.version = 2;
        more.length = proxy_v2_fixed;
        return more;
    }
    const unsigned version = bytes[12] >> 4, command = bytes[12] & 0x0f;
    const unsigned family = bytes[13] >> 4, transport = bytes[13] & 0x0f;
    const std::size_t length = (std::size_t{bytes[14]} << 8) | bytes[15];
    if (version != 2)
        return invalid(2, "not version 2");
    if (command > 1)
        return invalid(2, "unknown v2 command (LOCAL or PROXY)");
    proxy_header out;
    out.version = 2;
    out.length = proxy_v2_fixed + length;
    if (bytes.size() < out.length)
        return out; // need_more, and how much
    out.status = proxy_parse::done;
    if (command == 0 || (family == 0 && transport == 0)) {
        // LOCAL: the balancer's own connection (a health check); UNSPEC: endpoints not told.
        // Either way the peer's address stays; the address block and TLVs are skipped.
        out.local = true;
        return out;
    }
    if (transport != 1)
        return invalid(2, "a v2 header for another transport than TCP (STREAM)");
    const auto* block = bytes.data() + proxy_v2_fixed;
    char text[INET6_ADDRSTRLEN] = {};
    if (family == 1) { // AF_INET: 4 + 4 address bytes, 2 + 2 port bytes
        if (length < 12)
            return invalid(2, "a v2 IPv4 address block is 12 bytes");
        inet_ntop(AF_INET, block, text, sizeof text);
        out.source_port = static_cast<std::uint16_t>((block[8] << 8) | block[9]);
    } else if (family == 2) { // AF_INET6: 16 + 16, 2 + 2
        if (length < 36)
            return invalid(2, "a v2 IPv6 address block is 36 bytes");
        inet_ntop(AF_INET6, block, text, sizeof text);
        out.source_port = static_cast<std::uint16_t>((block[32] << 8) | block[33]);
    } else {
        return invalid(2, "a v2 header for another family than IPv4 or IPv6");
    }
    out.source = text; // TLVs after the addresses are skipped
    return out;
}

} // namespace

proxy_header parse_proxy_header(std::span<const unsigned char> bytes)
{
    const auto v1 =
        std::span(reinterpret_cast<const unsigned char*>(v1_signature.data()), v1_signature.size());
    if (bytes.empty())
        return {};
    if (agrees(bytes, v1)) {
        if (bytes.size() < v1.size()) {
            proxy_header more;
            more.version = 1;
            return more;
        }
        return parse_v1(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    }
    if (agrees(bytes, v2_signature)) {
        if (bytes.size() < sizeof v2_signature) {
            proxy_header more;
            more.version = 2;
            more.length = proxy_v2_fixed;
            return more;
        }
        return parse_v2(bytes);
    }
    return invalid(0, "no PROXY header (neither the v1 nor the v2 signature)");
}

} // namespace idemgate::gateway
