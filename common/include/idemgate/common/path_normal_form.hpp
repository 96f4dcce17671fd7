// SPDX-License-Identifier: Apache-2.0
#pragma once
// The normal form of a request path (RFC 3986 6.2.2), the one spelling routes are matched on and
// fingerprints are made of, so that "/api//orders", "/api/%6Frders" and "/api/x/../orders" are
// the same path as "/api/orders" (as most upstreams route them). Pure functions, no I/O.
//
//   - an escape of an unreserved character (ALPHA / DIGIT / "-" / "." / "_" / "~") is decoded,
//     every other escape is kept with upper-case hex digits ("%2f" -> "%2F"): an escaped '/' is
//     never a separator, an escaped '%' never decoded twice;
//   - a run of '/' is one '/' (an empty segment is no segment, as nginx's merge_slashes);
//   - then "." and ".." segments are removed (RFC 3986 5.2.4), escaped dots included.
//
// A path that cannot be normalised is a problem, not a guess: a '%' without two hex digits, or a
// ".." with no segment left to remove (RFC 3986 would drop it; nginx answers 400).
//
// Boost.URL judges, decodes and spells each escape again (pct_string_view, encode with its
// unreserved set); the rules above are ours. A path with no '%', "//" or "/." is decided without
// looking at an escape.
#include <cstddef>
#include <string>
#include <string_view>

namespace idemgate {

enum class path_problem {
    none,
    bad_escape, // a '%' not followed by two hexadecimal digits
    above_root  // a ".." segment that would climb above "/"
};

struct normal_path {
    // The normal form: a view of the path itself when it was normal already (the common case:
    // no copy), else into the caller's storage.
    std::string_view path;
    path_problem problem = path_problem::none;
    std::size_t offset = 0; // on a problem: where in the path it is (0-based)
};

// The normal form of `path` (no query). A path that does not start with '/' ("*") is returned
// as it is. `storage` is written only when the path needs rewriting.
normal_path normalize_path(std::string_view path, std::string& storage);

// A request target with its path in normal form and its query ("?..." on) as it came.
struct normal_target {
    std::string_view path;   // the normal path, without the query
    std::string_view target; // the normal path and the query
    path_problem problem = path_problem::none;
    std::size_t offset = 0; // on a problem: where in the target it is
};

// As normalize_path for the part of `target` before '?'; views of `target` itself in the common
// case, else of `storage`.
normal_target normalize_target(std::string_view target, std::string& storage);

// What is wrong, for a problem's detail or a configuration message: e.g. "the path has a '%' not
// followed by two hexadecimal digits at position 6" (`offset` + 1); "" for path_problem::none.
std::string describe(path_problem problem, std::size_t offset);

} // namespace idemgate
