// SPDX-License-Identifier: Apache-2.0
#include "idemgate/config/key_pattern.hpp"

namespace idemgate::config {

namespace {

// libstdc++ matches with a breadth-first automaton under this flag: the time is bounded by the
// key's length times the pattern's size, whatever the pattern, where the default depth-first
// matcher can take exponential time on patterns like (a+)+b.
constexpr std::regex::flag_type pattern_flags =
#ifdef __GLIBCXX__
    std::regex::ECMAScript | std::regex_constants::__polynomial;
#else
    std::regex::ECMAScript;
#endif

} // namespace

std::shared_ptr<const key_pattern> key_pattern::compile(const std::string& source, std::string& error)
{
    try {
        return std::make_shared<const key_pattern>(std::regex(source, pattern_flags));
    } catch (const std::regex_error& e) {
        // The breadth-first matcher refuses back-references as "too complex".
        bool backref = e.code() == std::regex_constants::error_complexity ||
                       e.code() == std::regex_constants::error_backref;
        error = backref ? "back-references are not allowed" : e.what();
        return nullptr;
    }
}

bool key_pattern::matches(std::string_view key) const noexcept
{
    // std::regex reports its own limits (memory, complexity) by throwing; on the request path
    // that is a key that does not match, never an exception.
    try {
        return std::regex_match(key.begin(), key.end(), re_);
    } catch (...) {
        return false;
    }
}

} // namespace idemgate::config
