// SPDX-License-Identifier: Apache-2.0
#pragma once
// The shadow report (routes[].idempotency.mode: shadow). The request path counts a shadow
// route's figures in the process's route counters (a relaxed add, nothing on enforcing routes);
// a flush sends what the store does not have yet, once a second from one I/O thread and before
// the admin API reads the store-wide report (GET /admin/v1/shadow), so the store-wide totals
// lag this process by at most a second and a failed flush changes no answer.
#include "state/worker.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::gateway::detail {

// How often the flush loop sends this process's counts to the store.
inline constexpr std::chrono::milliseconds shadow_flush_interval{1000};

// Sends every route's counts the store does not have yet through `session`; what the store
// could not take is sent again by the next flush.
boost::asio::awaitable<void> flush_shadow_counts(gateway_context& ctx, store::session& session);

// flush_shadow_counts every shadow_flush_interval on this worker's thread, until the drain
// begins (then once more).
boost::asio::awaitable<void> shadow_flush_loop(gateway_context& ctx, worker& w);

} // namespace idemgate::gateway::detail
