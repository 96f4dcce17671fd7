// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/gateway/problem_pages.hpp>
#include <idemgate/gateway/refusal.hpp>
#include <set>
#include <string>

using namespace idemgate::gateway;

TEST_CASE("problem pages: every refusal's type has one, each type once, with advice")
{
    std::set<std::string_view> slugs;
    for (const auto& doc : problem_docs()) {
        CAPTURE(doc.type->slug);
        CHECK(slugs.insert(doc.type->slug).second);
        CHECK(doc.advice.size() > 20);
        auto page = problem_page(doc.type->slug);
        REQUIRE(page);
        CHECK(page->starts_with("<!DOCTYPE html>"));
        CHECK(page->find("<code>" + std::string(doc.type->slug) + "</code>") != std::string::npos);
    }
    for (int r = 0; r < refusal_count; ++r) {
        const auto& row = rule_for(static_cast<refusal>(r));
        CAPTURE(row.type.slug);
        CHECK(find_problem_doc(row.type.slug) != nullptr);
    }
    CHECK_FALSE(problem_page("no-such-type"));
    CHECK_FALSE(problem_page("../x"));
    // Titles are escaped: a page never carries markup from the table.
    CHECK(
        problem_page("bad-connection-header")->find("<h1>Connection names a header the gateway needs</h1>") !=
        std::string::npos);
}
