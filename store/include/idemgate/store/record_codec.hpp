#pragma once
// The versioned binary encoding of a store record, as kept in Redis.
//
// Layout (version 1); every length is a LEB128 varint, so any bytes round-trip:
//   u8 version=1
//   token:        varint(n << 1 | 1) + n bytes packed from lower-case hex of even length,
//                 or varint(len << 1) + the bytes
//   u8 state | varint created_unix_ms (two's complement)
//   fingerprint:  u8 1 + 32 bytes (a lower-case hex SHA-256), or u8 0 + varint len + bytes
// and for a completed record only:
//   varint(status << 1 | custom) [+ varint len + reason when custom, i.e. not the standard
//   phrase of the status] | varint header_count
//   | { name: varint(index << 1 | 1) into a table of common names, or varint(len << 1) + bytes;
//       varint len + value } * header_count | varint len + body
// The owner token comes right after the version byte, so the Lua scripts of complete/release
// check ownership by comparing a prefix (owner_prefix) without decoding the rest. Packing the
// token, fingerprint, reason and common header names keeps the per-record overhead small
// (issue 5: Redis memory per record <= response size + 200 bytes).
#include <boost/system/error_code.hpp>
#include <idemgate/store/store.hpp>
#include <string>
#include <string_view>

namespace idemgate::store {

inline constexpr unsigned char record_codec_version = 1;

// Appends the encoding of `r` to `out`.
void encode_record(const record& r, std::string& out);

// The encoding of `r`.
std::string encode_record(const record& r);

// Decodes `bytes` into `out`. error::record_corrupt on truncated, trailing, garbage or
// unknown-version input; never throws.
boost::system::error_code decode_record(std::string_view bytes, record& out);

// The bytes every encoding of a record owned by `owner_token` starts with.
std::string owner_prefix(std::string_view owner_token);

} // namespace idemgate::store
