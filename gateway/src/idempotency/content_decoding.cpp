// SPDX-License-Identifier: Apache-2.0
#include <idemgate/gateway/content_decoding.hpp>
#include <zlib.h>

namespace idemgate::gateway {

decode_result gunzip(std::string_view body, std::size_t limit, std::string& out)
{
    out.clear();
    z_stream z{};
    // 16 + MAX_WBITS: a gzip wrapper (RFC 1952) only, its CRC-32 and length checked by zlib.
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
        return decode_result::invalid;
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(body.data()));
    z.avail_in = static_cast<uInt>(body.size());
    if (body.size() != z.avail_in) {
        inflateEnd(&z);
        return decode_result::too_large; // over 4 GiB encoded: far past any request limit
    }
    char chunk[16 * 1024];
    int rc = Z_OK;
    while (rc == Z_OK) {
        z.next_out = reinterpret_cast<Bytef*>(chunk);
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        const std::size_t produced = sizeof chunk - z.avail_out;
        if (out.size() + produced > limit) {
            inflateEnd(&z);
            return decode_result::too_large;
        }
        out.append(chunk, produced);
        if (rc == Z_BUF_ERROR && z.avail_in == 0)
            break; // the input ended inside the member
    }
    const bool whole = rc == Z_STREAM_END && z.avail_in == 0;
    inflateEnd(&z);
    return whole ? decode_result::decoded : decode_result::invalid;
}

} // namespace idemgate::gateway
