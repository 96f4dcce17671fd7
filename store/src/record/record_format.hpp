// SPDX-License-Identifier: Apache-2.0
#pragma once
// The record format's primitives (record_codec.cpp lays a record out with them): varints,
// length-prefixed bytes, lower-case hex packed to bytes, owner tokens, the dictionary of common
// header names, the standard reason phrases, and a reader that bounds-checks every read. In a
// header, inline, so they stay inlined into the codec that runs on every reserve and complete.
#include <array>
#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <idemgate/common/digest.hpp>
#include <string>
#include <string_view>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace idemgate::store::detail {

inline void put_varint(std::string& out, std::uint64_t v)
{
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}

inline void put_bytes(std::string& out, std::string_view bytes)
{
    put_varint(out, bytes.size());
    out.append(bytes);
}

// -1 for anything but 0-9 a-f: upper case is not packed, it would not round-trip.
inline constexpr std::array<signed char, 256> hex_table = [] {
    std::array<signed char, 256> t{};
    t.fill(-1);
    for (int c = '0'; c <= '9'; ++c)
        t[static_cast<std::size_t>(c)] = static_cast<signed char>(c - '0');
    for (int c = 'a'; c <= 'f'; ++c)
        t[static_cast<std::size_t>(c)] = static_cast<signed char>(c - 'a' + 10);
    return t;
}();

// Appends the bytes `hex` (even length) spells if it is all lower-case hex; otherwise leaves
// `out` as it was and returns false. This runs for every reserve and complete: with SSE2
// (every x86-64), sixteen digits are checked and packed at a time.
inline bool try_put_packed_hex(std::string& out, std::string_view hex)
{
    const auto start = out.size();
    out.resize(start + hex.size() / 2);
    char* p = out.data() + start;
    std::size_t i = 0;
    int invalid = 0;
#if defined(__SSE2__)
    // Signed byte compares: a byte at or above 0x80 is negative, so it is in neither range.
    const auto below = [](__m128i v, char c) { return _mm_cmplt_epi8(v, _mm_set1_epi8(c)); };
    const auto above = [](__m128i v, char c) { return _mm_cmpgt_epi8(v, _mm_set1_epi8(c)); };
    for (; i + 16 <= hex.size(); i += 16, p += 8) {
        const auto v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(hex.data() + i));
        const auto digit = _mm_and_si128(above(v, '0' - 1), below(v, '9' + 1));
        const auto letter = _mm_and_si128(above(v, 'a' - 1), below(v, 'f' + 1));
        if (_mm_movemask_epi8(_mm_or_si128(digit, letter)) != 0xffff) {
            invalid = -1;
            break;
        }
        // Each byte's value, 0-15: the low four bits, plus 9 for a letter ('a' is 0x61).
        const auto value =
            _mm_add_epi8(_mm_and_si128(v, _mm_set1_epi8(0x0f)), _mm_and_si128(letter, _mm_set1_epi8(9)));
        // Each 16-bit lane holds two digits, the first in its low byte: first << 4 | second.
        const auto pairs = _mm_and_si128(_mm_or_si128(_mm_slli_epi16(value, 4), _mm_srli_epi16(value, 8)),
                                         _mm_set1_epi16(0x00ff));
        _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi16(pairs, pairs));
    }
#endif
    for (; invalid >= 0 && i + 1 < hex.size(); i += 2) {
        int hi = hex_table[static_cast<unsigned char>(hex[i])];
        int lo = hex_table[static_cast<unsigned char>(hex[i + 1])];
        invalid |= hi | lo; // negative once any digit is not hex
        *p++ = static_cast<char>((hi & 0xf) << 4 | (lo & 0xf));
    }
    if (invalid < 0) {
        out.resize(start);
        return false;
    }
    return true;
}

inline void expand_hex(std::string_view packed, std::string& out)
{
    out.clear();
    append_hex(out, reinterpret_cast<const unsigned char*>(packed.data()), packed.size());
}

// The owner token: varint(n << 1 | 1) + n packed bytes when it is lower-case hex of even
// length (the gateway's tokens), else varint(len << 1) + the bytes. Deterministic, so the
// owner prefix of a token is always the same bytes.
inline void put_token(std::string& out, std::string_view token)
{
    if (!token.empty() && token.size() % 2 == 0) {
        auto start = out.size();
        put_varint(out, (token.size() / 2) << 1 | 1);
        if (try_put_packed_hex(out, token))
            return;
        out.resize(start);
    }
    put_varint(out, token.size() << 1);
    out.append(token);
}

// Header names seen on almost every response are one byte: varint(index << 1 | 1). Others are
// varint(len << 1) + the bytes. Names are stored exactly as received, so both spellings are
// listed. Append only: the index is part of the stored format.
inline constexpr std::array<std::string_view, 40> common_header_names{"Content-Type",
                                                                      "Content-Length",
                                                                      "Date",
                                                                      "Server",
                                                                      "Location",
                                                                      "ETag",
                                                                      "Cache-Control",
                                                                      "Set-Cookie",
                                                                      "Last-Modified",
                                                                      "Vary",
                                                                      "Content-Encoding",
                                                                      "Content-Language",
                                                                      "Expires",
                                                                      "X-Request-Id",
                                                                      "X-Request-ID",
                                                                      "Link",
                                                                      "Retry-After",
                                                                      "Strict-Transport-Security",
                                                                      "Access-Control-Allow-Origin",
                                                                      "X-Content-Type-Options",
                                                                      "content-type",
                                                                      "content-length",
                                                                      "date",
                                                                      "server",
                                                                      "location",
                                                                      "etag",
                                                                      "cache-control",
                                                                      "set-cookie",
                                                                      "last-modified",
                                                                      "vary",
                                                                      "content-encoding",
                                                                      "content-language",
                                                                      "expires",
                                                                      "x-request-id",
                                                                      "x-correlation-id",
                                                                      "link",
                                                                      "retry-after",
                                                                      "strict-transport-security",
                                                                      "access-control-allow-origin",
                                                                      "x-content-type-options"};

inline void put_header_name(std::string& out, std::string_view name)
{
    for (std::size_t i = 0; i < common_header_names.size(); ++i)
        if (common_header_names[i] == name) {
            put_varint(out, i << 1 | 1);
            return;
        }
    put_varint(out, name.size() << 1);
    out.append(name);
}

// The reason phrase is omitted when it is the standard one for the status.
inline std::string_view standard_reason(unsigned status)
{
    namespace http = boost::beast::http;
    if (status > 999 || http::int_to_status(status) == http::status::unknown)
        return {};
    return http::obsolete_reason(http::int_to_status(status));
}

// Reads from a byte range; every read checks the remaining size first.
class reader {
public:
    explicit reader(std::string_view bytes) : rest_(bytes) {}

    bool byte(unsigned char& v)
    {
        if (rest_.empty())
            return false;
        v = static_cast<unsigned char>(rest_.front());
        rest_.remove_prefix(1);
        return true;
    }

    bool varint(std::uint64_t& v)
    {
        v = 0;
        for (unsigned shift = 0; shift < 64; shift += 7) {
            unsigned char b = 0;
            if (!byte(b))
                return false;
            if (shift == 63 && (b & 0x7e))
                return false; // more than 64 bits
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if (!(b & 0x80))
                return true;
        }
        return false;
    }

    bool bytes(std::string& out)
    {
        std::uint64_t n = 0;
        if (!varint(n) || n > rest_.size())
            return false;
        out.assign(rest_.data(), static_cast<std::size_t>(n));
        rest_.remove_prefix(static_cast<std::size_t>(n));
        return true;
    }

    // varint(n << 1 | packed) then n bytes; packed bytes are expanded to lower-case hex.
    bool token(std::string& out)
    {
        std::uint64_t v = 0;
        std::string_view bytes;
        if (!varint(v) || !raw_checked(v >> 1, bytes))
            return false;
        if (v & 1)
            expand_hex(bytes, out);
        else
            out.assign(bytes);
        return true;
    }

    bool header_name(std::string& out)
    {
        std::uint64_t v = 0;
        if (!varint(v))
            return false;
        if (v & 1) {
            if ((v >> 1) >= common_header_names.size())
                return false;
            out.assign(common_header_names[v >> 1]);
            return true;
        }
        std::string_view bytes;
        if (!raw_checked(v >> 1, bytes))
            return false;
        out.assign(bytes);
        return true;
    }

    bool raw_checked(std::uint64_t n, std::string_view& out)
    {
        if (n > rest_.size())
            return false;
        return raw(static_cast<std::size_t>(n), out);
    }

    bool raw(std::size_t n, std::string_view& out)
    {
        if (n > rest_.size())
            return false;
        out = rest_.substr(0, n);
        rest_.remove_prefix(n);
        return true;
    }

    bool done() const { return rest_.empty(); }
    std::size_t remaining() const { return rest_.size(); }

private:
    std::string_view rest_;
};

} // namespace idemgate::store::detail
