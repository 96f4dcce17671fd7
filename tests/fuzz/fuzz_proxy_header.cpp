// SPDX-License-Identifier: Apache-2.0
// libFuzzer target: any bytes as the start of a connection with listen.proxy_protocol. A whole
// header is at most the bytes given, 107 bytes for v1 and 16 + its length field for v2, and names
// an address unless it keeps the peer's; bytes after it change nothing; every strict prefix of it
// asks for more; a v2 header that asks for more says how many bytes it needs.
#include <arpa/inet.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <idemgate/gateway/proxy_protocol.hpp>
#include <netinet/in.h>
#include <string>

namespace {

using namespace idemgate::gateway;

void require(bool ok, const char* what)
{
    if (!ok) {
        std::fprintf(stderr, "fuzz_proxy_header: invariant broken: %s\n", what);
        std::abort();
    }
}

bool is_address(const std::string& text)
{
    unsigned char out[sizeof(in6_addr)];
    return inet_pton(AF_INET, text.c_str(), out) == 1 || inet_pton(AF_INET6, text.c_str(), out) == 1;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::span<const unsigned char> bytes(data, size);
    const auto r = parse_proxy_header(bytes);
    if (r.status == proxy_parse::invalid)
        require(!r.problem.empty(), "a refusal says why");
    if (r.status == proxy_parse::need_more && r.version == 2)
        require(r.length == 0 || r.length > size, "v2 asks for more than it has");
    if (r.status != proxy_parse::done)
        return 0;
    require(r.length <= size, "a header is inside the bytes given");
    require(r.version == 1 || r.version == 2, "a header has a version");
    if (r.version == 1)
        require(r.length >= 15 && r.length <= proxy_v1_max, "v1 is 15 to 107 bytes");
    else
        require(r.length == proxy_v2_fixed + ((std::size_t{data[14]} << 8) | data[15]), "v2's length field");
    require(r.local || is_address(r.source), "a header names an address or keeps the peer's");
    // What follows is the stream's: the header alone parses the same.
    const auto alone = parse_proxy_header(bytes.first(r.length));
    require(alone.status == proxy_parse::done && alone.length == r.length && alone.source == r.source &&
                alone.local == r.local && alone.source_port == r.source_port,
            "bytes after the header change nothing");
    for (std::size_t n = 0; n < r.length; ++n)
        require(parse_proxy_header(bytes.first(n)).status == proxy_parse::need_more,
                "a prefix of a header asks for more");
    return 0;
}
