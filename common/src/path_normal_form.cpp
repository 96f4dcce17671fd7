// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <boost/url/decode_view.hpp>
#include <boost/url/encode.hpp>
#include <boost/url/pct_string_view.hpp>
#include <boost/url/rfc/unreserved_chars.hpp>
#include <cstring>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <idemgate/common/path_normal_form.hpp>

namespace idemgate {

namespace {

namespace urls = boost::urls;

// The normal spelling of one escape (RFC 3986 6.2.2.1 and 6.2.2.2): the octet itself when it is
// unreserved, else the escape with upper-case hexadecimal digits. Boost.URL judges the escape,
// decodes it and encodes the octet again with the unreserved set.
struct escape_form {
    char text[3];
    std::size_t size = 0; // 0: `at` does not start a valid escape ('%' and two hex digits)

    std::string_view spelling() const noexcept { return {text, size}; }
};

escape_form normal_escape(std::string_view path, std::size_t at) noexcept
{
    escape_form out;
    auto escape = urls::make_pct_string_view(path.substr(at, 3));
    if (!escape)
        return out;
    const urls::pct_string_view& valid = *escape;
    const char octet = (*valid).front();
    out.size = urls::encode(out.text, sizeof out.text, urls::string_view(&octet, 1), urls::unreserved_chars);
    return out;
}

enum class shape { normal, rewrite, bad_escape };

struct scanned {
    shape found;
    std::size_t offset = 0; // of a bad escape
};

// Is the path in normal form already? A bad escape is found here too. Only '%' and a '/'
// followed by '/' or '.' matter, all below '0': letters and digits cost one comparison.
scanned scan(std::string_view path) noexcept
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
            auto normal = normal_escape(path, offset);
            if (normal.size == 0)
                return {shape::bad_escape, offset};
            if (normal.spelling() != path.substr(offset, 3))
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
bool plainly_normal(std::string_view path) noexcept
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
bool left_as_is(std::string_view path) noexcept
{
    return path.empty() || path.front() != '/' || plainly_normal(path);
}

// normalize_path past left_as_is, with room for `capacity` bytes in `storage` when it is written.
// Kept out of line: the common case needs none of its registers.
[[gnu::noinline]] normal_path normalize(std::string_view path, std::string& storage, std::size_t capacity)
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
            auto normal = normal_escape(path, j);
            if (normal.size == 0)
                return {{}, path_problem::bad_escape, j};
            storage.append(normal.spelling());
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

} // namespace

normal_path normalize_path(std::string_view path, std::string& storage)
{
    if (left_as_is(path))
        return {path};
    return normalize(path, storage, path.size());
}

namespace {

// normalize_target past left_as_is.
[[gnu::noinline]] normal_target rewrite_target(std::string_view target, std::size_t query_at,
                                               std::string& storage)
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

} // namespace

normal_target normalize_target(std::string_view target, std::string& storage)
{
    const auto query_at = std::min(target.find('?'), target.size());
    const auto path = target.substr(0, query_at);
    if (left_as_is(path))
        return {path, target};
    return rewrite_target(target, query_at, storage);
}

std::string describe(path_problem problem, std::size_t offset)
{
    switch (problem) {
    case path_problem::none: return {};
    case path_problem::bad_escape:
        return "the path has a '%' not followed by two hexadecimal digits at position " +
               std::to_string(offset + 1);
    case path_problem::above_root:
        return "the path's \"..\" segment at position " + std::to_string(offset + 1) +
               " climbs above the root";
    }
    return {};
}

} // namespace idemgate
