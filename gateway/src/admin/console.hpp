// SPDX-License-Identifier: Apache-2.0
#pragma once
// The admin console: its page, script and style (GET /admin/, /admin/console.js,
// /admin/console.css: no token, they carry no data), and the API reads only it needed until now
// (GET /admin/v1/config, /admin/v1/reloads, /admin/v1/upstreams: behind the token like every
// /admin/v1/ path).
#include "core/exchange.hpp"
#include "state/process.hpp"

#include <optional>
#include <string_view>

namespace idemgate::gateway::detail {

// The answer for one of the console's files, or nullopt when `path` names none.
std::optional<response_type> answer_console_file(std::string_view path, http::verb method, unsigned version,
                                                 std::string_view problem_base);

// The answer for GET /admin/v1/config, /reloads or /upstreams (the token already checked), or
// nullopt when `path` is none of them.
std::optional<response_type> answer_console_data(const gateway_context& ctx, std::string_view path,
                                                 http::verb method, unsigned version,
                                                 std::string_view problem_base);

} // namespace idemgate::gateway::detail
