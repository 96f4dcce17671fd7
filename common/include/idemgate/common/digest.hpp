// SPDX-License-Identifier: Apache-2.0
#pragma once
// Hex encoding and the SHA-256 digests the project takes of small texts (configuration files,
// credentials, keys, tokens), in one place. The request fingerprint keeps its own per-thread
// digest context (gateway/src/idempotency/fingerprint.cpp): it runs on every request.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Appends the lower-case hex of `n` bytes at `data` to `out`. Every request's fingerprint,
// store key and record go through here: with SSE2 (every x86-64), sixteen bytes at a time.
inline void append_hex(std::string& out, const unsigned char* data, std::size_t n)
{
    const auto at = out.size();
    out.resize(at + 2 * n); // one size change: push_back per digit costs a capacity check each
    char* p = out.data() + at;
    std::size_t i = 0;
#if defined(__SSE2__)
    const auto low_nibble = _mm_set1_epi8(0x0f);
    for (; i + 16 <= n; i += 16, p += 32) {
        const auto v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
        const auto high = _mm_and_si128(_mm_srli_epi16(v, 4), low_nibble);
        const auto low = _mm_and_si128(v, low_nibble);
        // Each nibble to its digit: '0' + n, and 'a' - '0' - 10 more above 9.
        const auto digits = [](__m128i nibbles) {
            const auto letters =
                _mm_and_si128(_mm_cmpgt_epi8(nibbles, _mm_set1_epi8(9)), _mm_set1_epi8('a' - '0' - 10));
            return _mm_add_epi8(_mm_add_epi8(nibbles, _mm_set1_epi8('0')), letters);
        };
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p), digits(_mm_unpacklo_epi8(high, low)));
        _mm_storeu_si128(reinterpret_cast<__m128i*>(p + 16), digits(_mm_unpackhi_epi8(high, low)));
    }
#endif
    for (; i < n; ++i) {
        *p++ = hex_digits[data[i] >> 4];
        *p++ = hex_digits[data[i] & 0xf];
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

// 128 random bits (two words) as 32 lower-case hex digits, the words' bytes in memory order:
// request IDs and owner tokens, one per request, in one step of append_hex.
inline void append_hex_words(std::string& out, std::uint64_t first, std::uint64_t second)
{
    unsigned char bytes[16];
    std::memcpy(bytes, &first, 8);
    std::memcpy(bytes + 8, &second, 8);
    append_hex(out, bytes, 16);
}

using sha256_digest = std::array<unsigned char, 32>;

sha256_digest sha256(std::string_view text);
std::string sha256_hex(std::string_view text);
sha256_digest hmac_sha256(std::string_view key, std::string_view text);
std::string hmac_sha256_hex(std::string_view key, std::string_view text);

} // namespace idemgate
