// SPDX-License-Identifier: Apache-2.0
// The normal form of a request path (RFC 3986 6.2.2, runs of '/' as one), as tables: which
// spellings are one path, which stay apart, which cannot be normalised, and that a path in
// normal form is used where it lies.
#include <doctest/doctest.h>
#include <idemgate/common/path_normal_form.hpp>
#include <string>

using namespace idemgate;

TEST_CASE("path normal form: escapes, repeated slashes and dot segments")
{
    struct row {
        const char* path;
        const char* normal;
    };
    const row rows[] = {
        // Already normal: the path itself.
        {"/", "/"},
        {"/api/orders", "/api/orders"},
        {"/api/orders/", "/api/orders/"},
        {"/api/orders%2Fx", "/api/orders%2Fx"}, // an escaped '/' is no separator
        {"/a%20b/%C3%A9", "/a%20b/%C3%A9"},
        {"/a|b{c}", "/a|b{c}"}, // visible ASCII the request line lets through is left alone
        {"/a/.../.b/..c/b.", "/a/.../.b/..c/b."},
        {"/A/Orders", "/A/Orders"}, // the path is case-sensitive
        {"*", "*"},                 // not a path (OPTIONS *)
        // Escapes of unreserved characters are decoded, others get upper-case hex.
        {"/api/%6Frders", "/api/orders"},
        {"/api/%6frders", "/api/orders"},
        {"/%41%5A%61%7A%30%39%2D%2E%5F%7E", "/AZaz09-._~"},
        {"/api/orders%2fx", "/api/orders%2Fx"},
        {"/a%3ab%3Fc%25", "/a%3Ab%3Fc%25"},
        {"/%2541", "/%2541"}, // an escaped '%' is not decoded twice
        {"/%7euser", "/~user"},
        // Runs of '/' are one '/'.
        {"//", "/"},
        {"/api//orders", "/api/orders"},
        {"///api///orders//", "/api/orders/"},
        // Dot segments (RFC 3986 5.2.4), escaped dots included.
        {"/api/./orders", "/api/orders"},
        {"/api/x/../orders", "/api/orders"},
        {"/api/%2E/orders", "/api/orders"},
        {"/api/x/%2e%2E/orders", "/api/orders"},
        {"/api/x/.%2e/orders", "/api/orders"},
        {"/./", "/"},
        {"/.", "/"},
        {"/a/.", "/a/"},
        {"/a/..", "/"},
        {"/a/b/..", "/a/"},
        {"/a/b/../", "/a/"},
        {"/a/b/../../c", "/c"},
        {"/a/./b/./c/.", "/a/b/c/"},
        {"/a/..%2Fb", "/a/..%2Fb"}, // "..%2Fb" is one segment, not a dot segment
        // Slashes are merged before dot segments go, as nginx does: ".." removes "x", not "".
        {"/api/x//../orders", "/api/orders"},
        {"/a/..//", "/"},
    };
    for (const auto& r : rows) {
        CAPTURE(r.path);
        std::string storage;
        auto normal = normalize_path(r.path, storage);
        CHECK(normal.problem == path_problem::none);
        CHECK(normal.path == r.normal);
        // Normal form is a fixed point.
        std::string again;
        auto twice = normalize_path(normal.path, again);
        CHECK(twice.path == normal.path);
        CHECK(twice.path.data() == normal.path.data());
    }
}

TEST_CASE("path normal form: a path in normal form is used where it lies; storage is left alone")
{
    const std::string_view paths[] = {"/", "/api/orders", "/api/orders%2Fx/", "/a%20b", "/a/.b", "*", ""};
    for (auto path : paths) {
        CAPTURE(path);
        std::string storage = "untouched";
        auto normal = normalize_path(path, storage);
        CHECK(normal.path.data() == path.data());
        CHECK(normal.path.size() == path.size());
        CHECK(storage == "untouched");
    }
}

TEST_CASE("path normal form: bad escapes and climbs above the root are problems, with their position")
{
    struct row {
        const char* path;
        path_problem problem;
        std::size_t offset;
    };
    const row rows[] = {
        {"/api/%zz", path_problem::bad_escape, 5},
        {"/api/%", path_problem::bad_escape, 5},
        {"/api/%4", path_problem::bad_escape, 5},
        {"/api/%4g/x", path_problem::bad_escape, 5},
        {"/a//b/%G1", path_problem::bad_escape, 6},
        {"/..", path_problem::above_root, 1},
        {"/../x", path_problem::above_root, 1},
        {"/a/../../x", path_problem::above_root, 6},
        {"/a/%2E%2E/%2e%2e/x", path_problem::above_root, 10},
    };
    for (const auto& r : rows) {
        CAPTURE(r.path);
        std::string storage;
        auto normal = normalize_path(r.path, storage);
        CHECK(normal.problem == r.problem);
        CHECK(normal.offset == r.offset);
        CHECK(normal.path.empty());
        CHECK_FALSE(describe(normal.problem, normal.offset).empty());
    }
    CHECK(describe(path_problem::bad_escape, 5) ==
          "the path has a '%' not followed by two hexadecimal digits at position 6");
    CHECK(describe(path_problem::above_root, 1) ==
          "the path's \"..\" segment at position 2 climbs above the root");
    CHECK(describe(path_problem::none, 0).empty());
}

TEST_CASE("path normal form: a target keeps its query as it came")
{
    struct row {
        const char* target;
        const char* path;
        const char* normal;
    };
    const row rows[] = {
        {"/api/orders?x=1", "/api/orders", "/api/orders?x=1"},
        {"/api//orders?a=%6F&b=//../", "/api/orders", "/api/orders?a=%6F&b=//../"},
        {"/api/%6Frders?", "/api/orders", "/api/orders?"},
        {"/a/b/..", "/a/", "/a/"},
        {"/x?%zz", "/x", "/x?%zz"}, // the query is not the path's business
        {"*", "*", "*"},
    };
    for (const auto& r : rows) {
        CAPTURE(r.target);
        std::string storage;
        auto normal = normalize_target(r.target, storage);
        CHECK(normal.problem == path_problem::none);
        CHECK(normal.path == r.path);
        CHECK(normal.target == r.normal);
        if (std::string_view(r.target) == r.normal)
            CHECK(normal.target.data() == r.target);
    }
    std::string storage;
    auto bad = normalize_target("/a/%z?q", storage);
    CHECK(bad.problem == path_problem::bad_escape);
    CHECK(bad.offset == 3);
}
