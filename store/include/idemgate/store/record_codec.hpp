#pragma once
// The versioned binary encoding of a store record, as kept in Redis.
//
// Layout (version 1), every length a LEB128 varint so any bytes round-trip:
//   u8 version=1 | varint token_len | token | u8 state | varint created_unix_ms (two's complement)
//   | u8 fingerprint_form | fingerprint ...
//   and, for a completed record only: varint status | varint len reason | varint header_count
//   | { varint len name | varint len value } * header_count | varint len body
// The owner token comes first so the Lua scripts of complete/release can check ownership by
// comparing a prefix (owner_prefix) without decoding the rest. A hex SHA-256 fingerprint is
// packed into its 32 raw bytes (fingerprint_form 1) to keep the per-record overhead small
// (issue 5: Redis memory per record <= response size + 200 bytes).
#include <idemgate/store/store.hpp>

#include <boost/system/error_code.hpp>

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
