// SPDX-License-Identifier: Apache-2.0
#pragma once
// The PROXY protocol header a balancer sends at the start of a connection (HAProxy's
// proxy-protocol.txt, versions 1 and 2): who the client is when the balancer forwards TCP.
// A pure function over the bytes received so far, so the connection can peek at them, ask for
// more, and then take exactly the header's bytes: what follows belongs to HTTP or TLS.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace idemgate::gateway {

enum class proxy_parse {
    need_more, // a prefix of a header so far
    invalid,   // not a header, or a broken one (`problem` says how)
    done,      // a whole header of `length` bytes
};

struct proxy_header {
    proxy_parse status = proxy_parse::need_more;
    // done: the header's bytes. need_more: at least this many bytes are needed (0: unknown yet).
    std::size_t length = 0;
    int version = 0; // 1 (text) or 2 (binary) once the signature is known
    // done: the connection's endpoints are the peer's own (v2 LOCAL, v1 UNKNOWN, v2 UNSPEC):
    // the client address stays the peer's.
    bool local = false;
    std::string source;            // done and not local: the client's address (IPv4 or IPv6 text)
    std::uint16_t source_port = 0; // and its port
    std::string_view problem;      // invalid: why (a static string)
};

// The longest v1 header, "\r\n" included (the specification's 107 bytes).
inline constexpr std::size_t proxy_v1_max = 107;
// The fixed part of a v2 header; its length field says how many bytes follow (addresses, TLVs).
inline constexpr std::size_t proxy_v2_fixed = 16;

// Parses the header at the start of `bytes` (which may hold more: the stream after it).
proxy_header parse_proxy_header(std::span<const unsigned char> bytes);
inline proxy_header parse_proxy_header(std::string_view bytes)
{
    return parse_proxy_header(std::span(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()));
}

} // namespace idemgate::gateway
