// SPDX-License-Identifier: Apache-2.0
#pragma once
// AES-256-GCM for the response part of stored records (store.encryption).
//
// A sealed part is: key id (4 bytes) | nonce (12 random bytes) | ciphertext | tag (16 bytes).
// The key id is the first 4 bytes of SHA-256("idemgate record key" || key): it names the key a
// record was sealed under without revealing it, so after a rotation (the old key kept as the
// previous key) each record is opened with the key that sealed it. Which bytes are authenticated
// besides the plaintext (the AAD) is the caller's choice: the record codec binds the ciphertext
// to the record's clear part and to its Redis key.
#include <array>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace idemgate::store {

// Why a sealed part did not open, for logs; callers see error::record_corrupt either way.
enum class seal_fault { none, malformed, unknown_key, not_authentic };

std::string_view to_string(seal_fault f) noexcept;

// Immutable after construction; copies share the keys; safe to use from any thread.
class record_cipher {
public:
    static constexpr std::size_t key_size = 32;
    static constexpr std::size_t key_id_size = 4;
    static constexpr std::size_t nonce_size = 12;
    static constexpr std::size_t tag_size = 16;
    static constexpr std::size_t overhead = key_id_size + nonce_size + tag_size;
    using key_id_type = std::array<unsigned char, key_id_size>;

    // No keys: nothing is sealed, nothing opens.
    record_cipher() = default;

    // `current` seals and opens, `previous` only opens (rotation). Each is 32 raw bytes or empty
    // (none). Throws std::invalid_argument for another size (start-up only, never the data path).
    explicit record_cipher(std::string_view current, std::string_view previous = {});

    // A current key is set: seal() works.
    bool seals() const noexcept;
    // Some key is set: records sealed under it open.
    bool opens() const noexcept;

    // Appends the sealed form of `plaintext` to `out`, authenticating every part of `aad` too.
    // error::record_seal_failed if no current key or OpenSSL fails (then `out` is unchanged).
    boost::system::error_code seal(std::string_view plaintext, std::span<const std::string_view> aad,
                                   std::string& out) const;

    // Opens a sealed part into `plaintext` (replaced). error::record_corrupt when it is
    // truncated, under an unknown key, or not authentic (wrong key, any changed byte of it or
    // of `aad`); `fault` (when given) says which.
    boost::system::error_code open(std::string_view sealed, std::span<const std::string_view> aad,
                                   std::string& plaintext, seal_fault* fault = nullptr) const;

    // The key id of a 32-byte key.
    static key_id_type key_id(std::string_view key);

private:
    struct impl;
    std::shared_ptr<const impl> impl_;
};

} // namespace idemgate::store
