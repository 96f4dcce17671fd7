// SPDX-License-Identifier: Apache-2.0
#include "idemgate/test/gzip.hpp"

#include <stdexcept>
#include <zlib.h>

namespace idemgate::test {

std::string gzip_member(const std::string& data, unsigned long mtime, const char* name, int level)
{
    z_stream z{};
    if (deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        throw std::runtime_error("deflateInit2 failed");
    gz_header header{};
    header.time = mtime;
    header.os = 3; // Unix
    header.name = reinterpret_cast<Bytef*>(const_cast<char*>(name));
    std::string out(
        deflateBound(&z, static_cast<uLong>(data.size())) + 64 + (name ? std::string(name).size() : 0), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    bool ok = deflateSetHeader(&z, &header) == Z_OK && deflate(&z, Z_FINISH) == Z_STREAM_END;
    out.resize(out.size() - z.avail_out);
    deflateEnd(&z);
    if (!ok)
        throw std::runtime_error("deflate failed");
    return out;
}

} // namespace idemgate::test
