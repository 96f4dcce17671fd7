// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hex encoding and the SHA-256 digests the project takes of small texts (configuration files,
// credentials, keys, tokens), in one place. The request fingerprint keeps its own per-thread
// digest context (gateway/src/idempotency/fingerprint.cpp): it runs on every request.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace idemgate {

inline constexpr char hex_digits[] = "0123456789abcdef";

// The value of a hex digit of either case, or -1.
inline constexpr int hex_value(char c) noexcept
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

// The value of a lower-case hex digit (as to_hex writes them), or -1.
inline constexpr int lower_hex_value(char c) noexcept
{
    return c >= 'A' && c <= 'F' ? -1 : hex_value(c);
}

// Appends the lower-case hex of `n` bytes at `data` to `out`.
inline void append_hex(std::string& out, const unsigned char* data, std::size_t n)
{
    const auto at = out.size();
    out.resize(at + 2 * n); // one size change: push_back per digit costs a capacity check each
    for (std::size_t i = 0; i < n; ++i) {
        out[at + 2 * i] = hex_digits[data[i] >> 4];
        out[at + 2 * i + 1] = hex_digits[data[i] & 0xf];
    }
}

// Lower-case hex of `bytes`.
inline std::string to_hex(std::string_view bytes)
{
    std::string out;
    append_hex(out, reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
    return out;
}

// 64 random bits as 16 lower-case hex digits, least significant digit first (token material).
inline void append_hex_bits(std::string& out, std::uint64_t bits)
{
    const auto at = out.size();
    out.resize(at + 16);
    for (std::size_t i = 0; i < 16; ++i)
        out[at + i] = hex_digits[(bits >> (i * 4)) & 0xf];
}

using sha256_digest = std::array<unsigned char, 32>;

sha256_digest sha256(std::string_view text);
std::string sha256_hex(std::string_view text);
sha256_digest hmac_sha256(std::string_view key, std::string_view text);
std::string hmac_sha256_hex(std::string_view key, std::string_view text);

} // namespace idemgate
