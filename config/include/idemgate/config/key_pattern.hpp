// SPDX-License-Identifier: Apache-2.0
#pragma once
// routes[].idempotency.key_format.pattern compiled: an ECMAScript regular expression the whole
// key must match. Compiled once when the configuration is loaded; matching runs in time
// polynomial in the key's length (no backtracking blow-up), so back-references are refused.
#include <memory>
#include <regex>
#include <string>
#include <string_view>

namespace idemgate::config {

class key_pattern {
public:
    // The compiled pattern, or null with `error` saying why it cannot be used.
    static std::shared_ptr<const key_pattern> compile(const std::string& source, std::string& error);

    // True when the whole of `key` matches.
    bool matches(std::string_view key) const noexcept;

    explicit key_pattern(std::regex re) : re_(std::move(re)) {}

private:
    std::regex re_;
};

} // namespace idemgate::config
