// SPDX-License-Identifier: Apache-2.0
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
// and for a status_only or tombstone record the same response part with an empty body, then
//   varint body_length | varint 32 + the packed SHA-256 of the body, or varint 0 (none)
// The owner token comes right after the version byte, so the Lua scripts of complete/release
// check ownership by comparing a prefix (owner_prefix) without decoding the rest. Packing the
// token, fingerprint, reason and common header names keeps the per-record overhead small
// (the budget: Redis memory per record <= response size + 200 bytes).
//
// Version 2 (store.encryption) is a record with a response part (completed, status_only,
// tombstone) whose response part is sealed:
//   u8 version=2 | token | u8 state=2 | varint created_unix_ms | fingerprint   (as version 1: the head)
//   | key id (4) | nonce (12) | AES-256-GCM(the version-1 response part) | tag (16)
// The authenticated data is varint(len) + binding (the Redis key) + the head, so a ciphertext
// moved to another key or record does not open (record_cipher.hpp). Records without a response
// (in flight, outcome unknown) have nothing to seal and stay version 1; they are what
// complete/release compare owner_prefix against, so the prefix stays the version-1 one.
// Version-1 completed records still decode when a cipher is given (written before encryption
// was turned on; they expire by record_ttl).
//
// Sealing happens above the backend (the protection decorator, protected_backend.hpp): it seals
// a record's response part into record::sealed_response (seal_record, bound to the backend's
// record_id), the backend encodes that record as version 2 with the sealed bytes verbatim
// (encode_record), decodes it back without opening it (decode_stored_record), and the decorator
// opens it (open_record). The head is canonical (a record's head always encodes to the same
// bytes), so the bytes are exactly those encode_record with a cipher writes, and records written
// either way read either way.
#include <boost/system/error_code.hpp>
#include <idemgate/store/record_cipher.hpp>
#include <idemgate/store/store.hpp>
#include <string>
#include <string_view>

namespace idemgate::store {

inline constexpr unsigned char record_codec_version = 1;
inline constexpr unsigned char record_codec_version_sealed = 2;

// Appends the encoding of `r` to `out`: version 1 (clear), or version 2 when `r` carries a
// sealed response part (record::sealed_response, from seal_record).
void encode_record(const record& r, std::string& out);

// The encoding of `r`.
std::string encode_record(const record& r);

// Appends the encoding of `r` to `out`: version 2 when `r` has a response part and `cipher` has a
// current key (the response sealed and bound to `binding`), else version 1.
// error::record_seal_failed when sealing fails (then `out` is unchanged).
boost::system::error_code encode_record(const record& r, std::string& out, const record_cipher& cipher,
                                        std::string_view binding);

// Decodes `bytes` into `out`. error::record_corrupt on truncated, trailing, garbage or
// unknown-version input; never throws. A sealed (version 2) record never decodes here.
boost::system::error_code decode_record(std::string_view bytes, record& out);

// The same, opening a sealed record with `cipher` and the `binding` it was encoded with.
// error::record_corrupt also when it is under an unknown key or not authentic; `out` is then
// untouched, and `fault` (when given) says why, for the log.
boost::system::error_code decode_record(std::string_view bytes, record& out, const record_cipher& cipher,
                                        std::string_view binding, seal_fault* fault = nullptr);

// Decodes `bytes` as a backend below the protection decorator does: version 1 as decode_record,
// and a sealed (version 2) record with its response part left sealed in out.sealed_response
// (open_record opens it). error::record_corrupt on input decode_record also refuses.
boost::system::error_code decode_stored_record(std::string_view bytes, record& out);

// Seals the response part of `r` (completed, status_only, tombstone) with `cipher`'s current key,
// bound to `binding` (the backend's record_id of the record) and to the version-2 head: moves it
// into r.sealed_response and clears response, body_length and body_sha256. Nothing to do (no
// error) for a record without a response part, an already sealed one, or a cipher without a
// current key. error::record_seal_failed when sealing fails (then `r` is unchanged).
boost::system::error_code seal_record(record& r, const record_cipher& cipher, std::string_view binding);

// Opens r.sealed_response with `cipher` (current or previous key) and the `binding` it was sealed
// with, back into the response part; a clear record is left as it is. error::record_corrupt when
// it is under an unknown key, not authentic or malformed (then `r` is unchanged); `fault` (when
// given) says why, for the log.
boost::system::error_code open_record(record& r, const record_cipher& cipher, std::string_view binding,
                                      seal_fault* fault = nullptr);

// The bytes every encoding of a record owned by `owner_token` starts with.
std::string owner_prefix(std::string_view owner_token);

} // namespace idemgate::store
