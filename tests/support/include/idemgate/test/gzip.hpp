// SPDX-License-Identifier: Apache-2.0
#pragma once
// gzip bodies for the tests of fingerprint.decode: gzip (zlib, as clients make them).
#include <string>

namespace idemgate::test {

// `data` as one gzip member (RFC 1952) whose header carries `mtime` and, when given, a file
// name, compressed at `level` (1-9). Throws std::runtime_error if zlib refuses.
std::string gzip_member(const std::string& data, unsigned long mtime, const char* name = nullptr,
                        int level = 6);

} // namespace idemgate::test
