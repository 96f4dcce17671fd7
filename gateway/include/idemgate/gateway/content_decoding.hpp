// SPDX-License-Identifier: Apache-2.0
#pragma once
// A request body's content coding undone for its fingerprint (routes[].idempotency.fingerprint.
// decode: gzip): two retries whose gzip bodies differ only in the gzip header (its timestamp, the
// OS byte, a file name) or in how the compressor chose its blocks decode to the same bytes.
// Pure: the body in, the decoded bytes out, bounded.
#include <cstddef>
#include <string>
#include <string_view>

namespace idemgate::gateway {

enum class decode_result {
    decoded,   // `out` holds the decoded bytes
    too_large, // the decoded bytes would exceed `limit` (a decompression bomb stops here)
    invalid    // not one whole gzip member (RFC 1952), or bytes after it: `out` is unspecified
};

// One gzip member (header, deflate data, CRC-32 and length checked) into `out`, at most `limit`
// bytes of it.
decode_result gunzip(std::string_view body, std::size_t limit, std::string& out);

} // namespace idemgate::gateway
