// SPDX-License-Identifier: Apache-2.0
#pragma once
// The hand-written percent decoders that Boost.URL replaced, kept verbatim for the differential
// test (percent_coding_differential_test.cpp), which holds the new code to their every output:
//   - normalize_path / normalize_target: common/src/path_normal_form.cpp (its `escaped`,
//     `unreserved` and the re-encoding of an escape);
//   - percent_decode: gateway/src/idempotency/classify.cpp (a client lookup path's key);
//   - form_decode: the `decode` lambda of query_params in gateway/src/admin/admin.cpp.
// Test code only: nothing in the product includes it.
#include <algorithm>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <idemgate/common/digest.hpp>
#include <idemgate/common/path_normal_form.hpp>
#include <string>
#include <string_view>

namespace idemgate::reference {

constexpr bool unreserved(unsigned char c) noexcept
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

// The byte an escape at `at` ('%') stands for, or -1 when two hex digits do not follow.
inline int escaped(std::string_view path, std::size_t at) noexcept
{
    if (path.size() - at < 3)
        return -1;
    int hi = hex_value(path[at + 1]);
    int lo = hex_value(path[at + 2]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

constexpr bool lower_hex_letter(char c) noexcept
{
    return c >= 'a' && c <= 'f';
}

enum class shape { normal, rewrite, bad_escape };

struct scanned {
    shape found;
    std::size_t offset = 0; // of a bad escape
};

// Is the path in normal form already? A bad escape is found here too. Only '%' and a '/'
// followed by '/' or '.' matter, all below '0': letters and digits cost one comparison.
inline scanned scan(std::string_view path) noexcept
{
    const char* const begin = path.data();
    const char* const end = begin + path.size();
    for (const char* at = begin; at != end; ++at) {
        const char c = *at;
        if (c > '/')
            continue;
        if (c == '/') {
            // "//", or a "." or ".." segment after this '/'.
            const char* next = at + 1;
            if (next == end)
                break;
            if (*next == '/' || (*next == '.' && (next + 1 == end || next[1] == '/' ||
                                                  (next[1] == '.' && (next + 2 == end || next[2] == '/')))))
                return {shape::rewrite};
        } else if (c == '%') {
            const auto offset = static_cast<std::size_t>(at - begin);
            int value = escaped(path, offset);
            if (value < 0)
                return {shape::bad_escape, offset};
            if (unreserved(static_cast<unsigned char>(value)) || lower_hex_letter(at[1]) ||
                lower_hex_letter(at[2]))
                return {shape::rewrite};
            at += 2;
        }
    }
    return {shape::normal};
}

#if defined(__SSE2__)
// A '%', "//" or "/." among the 16 bytes at `at` (the pair read from `at` and `at` + 1).
inline bool suspect_block(const char* at) noexcept
{
    const auto a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
    const auto b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at + 1));
    const auto slash = _mm_set1_epi8('/');
    const auto pair =
        _mm_and_si128(_mm_cmpeq_epi8(a, slash),
                      _mm_or_si128(_mm_cmpeq_epi8(b, slash), _mm_cmpeq_epi8(b, _mm_set1_epi8('.'))));
    return _mm_movemask_epi8(_mm_or_si128(pair, _mm_cmpeq_epi8(a, _mm_set1_epi8('%')))) != 0;
}
#endif

// Nothing in the path that normalising could change or refuse? Sixteen bytes at a time (SSE2,
// every x86-64): the common path is looked at without a branch per byte. A suspect ("/.well",
// "%20" are normal) is decided by scan().
inline bool plainly_normal(std::string_view path) noexcept
{
#if defined(__SSE2__)
    const char* at = path.data();
    std::size_t left = path.size();
    for (; left >= 17; at += 16, left -= 16)
        if (suspect_block(at))
            return false;
    // The last 16 bytes or fewer in a zeroed block, so that nothing past the path is read.
    char tail[17] = {};
    std::memcpy(tail, at, left);
    return !suspect_block(tail);
#else
    return scan(path).found == shape::normal;
#endif
}

// Already normal, or nothing to normalise ("*"): the common case, decided without a copy.
inline bool left_as_is(std::string_view path) noexcept
{
    return path.empty() || path.front() != '/' || plainly_normal(path);
}

// normalize_path past left_as_is, with room for `capacity` bytes in `storage` when it is written.
// Kept out of line: the common case needs none of its registers.
inline normal_path normalize(std::string_view path, std::string& storage, std::size_t capacity)
{
    auto found = scan(path);
    if (found.found == shape::normal)
        return {path};
    if (found.found == shape::bad_escape)
        return {{}, path_problem::bad_escape, found.offset};
    // Rewritten segment by segment: each one is decoded after a '/' in `storage`, then judged.
    storage.clear();
    storage.reserve(capacity);
    std::size_t i = 0; // at a '/'
    while (i < path.size()) {
        std::size_t start = path.find_first_not_of('/', i);
        if (start == std::string_view::npos) {
            storage.push_back('/'); // the path ends in '/': kept
            break;
        }
        std::size_t end = std::min(path.find('/', start), path.size());
        const std::size_t mark = storage.size();
        storage.push_back('/');
        for (std::size_t j = start; j < end; ++j) {
            if (path[j] != '%') {
                storage.push_back(path[j]);
                continue;
            }
            int value = escaped(path, j);
            if (value < 0)
                return {{}, path_problem::bad_escape, j};
            if (unreserved(static_cast<unsigned char>(value))) {
                storage.push_back(static_cast<char>(value));
            } else {
                storage.push_back('%');
                storage.push_back("0123456789ABCDEF"[value >> 4]);
                storage.push_back("0123456789ABCDEF"[value & 15]);
            }
            j += 2;
        }
        std::string_view segment = std::string_view(storage).substr(mark + 1);
        const bool last = end == path.size();
        if (segment == "." || segment == "..") {
            const bool up = segment.size() == 2;
            storage.resize(mark);
            if (up) {
                if (storage.empty())
                    return {{}, path_problem::above_root, start};
                storage.resize(storage.rfind('/'));
            }
            if (last)
                storage.push_back('/'); // "/a/." is "/a/", "/a/b/.." is "/a/"
        }
        i = end;
    }
    if (storage.empty())
        storage.push_back('/');
    return {storage};
}

inline normal_path normalize_path(std::string_view path, std::string& storage)
{
    if (left_as_is(path))
        return {path};
    return normalize(path, storage, path.size());
}

// normalize_target past left_as_is.
inline normal_target rewrite_target(std::string_view target, std::size_t query_at, std::string& storage)
{
    auto normal = normalize(target.substr(0, query_at), storage, target.size());
    if (normal.problem != path_problem::none)
        return {{}, {}, normal.problem, normal.offset};
    if (normal.path.data() == target.data())
        return {normal.path, target};
    // The query goes after the normal path in `storage`; the views are taken once it is whole.
    const auto path_size = storage.size();
    storage.append(target.substr(query_at));
    std::string_view whole(storage);
    return {whole.substr(0, path_size), whole};
}

inline normal_target normalize_target(std::string_view target, std::string& storage)
{
    const auto query_at = std::min(target.find('?'), target.size());
    const auto path = target.substr(0, query_at);
    if (left_as_is(path))
        return {path, target};
    return rewrite_target(target, query_at, storage);
}

// RFC 3986 percent-decoding of a path segment ('+' is itself).
inline bool percent_decode(std::string_view in, std::string& out)
{
    out.clear();
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out.push_back(in[i]);
            continue;
        }
        int hi = i + 2 < in.size() ? idemgate::hex_value(in[i + 1]) : -1;
        int lo = hi >= 0 ? idemgate::hex_value(in[i + 2]) : -1;
        if (lo < 0)
            return false;
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
    }
    return true;
}

// The admin API's query decoding (application/x-www-form-urlencoded: '+' is a space).
inline bool form_decode(std::string_view text, std::string& out)
{
    out.clear();
    auto decode = [](std::string_view in, std::string& to) {
        for (std::size_t i = 0; i < in.size(); ++i) {
            if (in[i] == '+') {
                to.push_back(' ');
            } else if (in[i] == '%') {
                if (i + 2 >= in.size())
                    return false;
                int hi = idemgate::hex_value(in[i + 1]);
                int lo = idemgate::hex_value(in[i + 2]);
                if (hi < 0 || lo < 0)
                    return false;
                to.push_back(static_cast<char>(hi * 16 + lo));
                i += 2;
            } else {
                to.push_back(in[i]);
            }
        }
        return true;
    };
    return decode(text, out);
}

} // namespace idemgate::reference
