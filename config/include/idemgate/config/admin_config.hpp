// SPDX-License-Identifier: Apache-2.0
#pragma once
// The admin API's settings (admin:) and the rule of the shadow report's window.
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::config {

struct admin_config {
    std::string token_env; // env var holding the admin API's bearer token ("" = API off)
    std::string token;     // resolved from token_env at load time, never from YAML
    // GET /admin/v1/shadow's sliding window (its `window` parameter overrides it for one call):
    // parse_shadow_window's rule. Reloadable.
    std::chrono::milliseconds shadow_window{3600 * 1000};
};

// A shadow report's window (admin.shadow_window, GET /admin/v1/shadow?window=): a duration of
// whole minutes from 1m to 24h (the store keeps one bucket a minute for 24 h); nullopt for anything
// else, which a message calls: "<text>" shadow_window_rule.
std::optional<std::chrono::milliseconds> parse_shadow_window(std::string_view text);
inline constexpr std::string_view shadow_window_rule = "must be whole minutes from 1m to 24h";
inline constexpr std::chrono::milliseconds shadow_window_longest{24 * 3600 * 1000};

} // namespace idemgate::config
