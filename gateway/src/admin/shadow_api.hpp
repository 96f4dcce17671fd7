// SPDX-License-Identifier: Apache-2.0
#pragma once
// GET /admin/v1/shadow: the shadow report of every shadow route, store-wide (every gateway on the
// store adds to it), since the store began counting and over a sliding window (admin.shadow_window,
// or the call's `window` parameter: whole minutes from 1m to 24h).
#include "core/exchange.hpp"
#include "state/process.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/string_body.hpp>

namespace idemgate::gateway::detail {

// Flushes this process's counts first (so its own requests are in), then reads the store's.
// `session` is the admin's own, on the control thread.
boost::asio::awaitable<response_type> answer_shadow(gateway_context& ctx, store::session& session,
                                                    const http::request<http::string_body>& req);

} // namespace idemgate::gateway::detail
