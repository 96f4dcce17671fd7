// SPDX-License-Identifier: Apache-2.0
#pragma once
// The prober of held keys (routes[].idempotency.reconcile): the probes settle writes on the
// store's schedule (idempotency/probe_entry.hpp) are sent from here, to the route's upstream
// with forward_other (forward/proxy.hpp); found completes the key, not found releases it.
#include "state/worker.hpp"

#include <boost/asio/awaitable.hpp>

namespace idemgate::gateway::detail {

// Claims and sends the due probes of every gateway sharing the store, on this worker's thread,
// until the drain begins.
boost::asio::awaitable<void> reconcile_loop(gateway_context& ctx, worker& w);

} // namespace idemgate::gateway::detail
