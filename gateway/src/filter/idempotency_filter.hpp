// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency filter: the phases of request_phases.hpp (classify -> scope -> tier_lookup ->
// reserve -> admit -> forward -> settle -> finish_answer). The only code that talks to the store and
// to decision.hpp; the connection loop hands it a fully read request and writes whatever answer
// it returns.
#include "core/request_exchange.hpp"
#include "state/worker.hpp"

#include <boost/asio/awaitable.hpp>

namespace idemgate::gateway::detail {

// Handles one complete request (body read, framing checked) on worker `w`: `ex.req` under the
// configuration `ex.env`, with this thread's upstream pools. With a trace (tracing on), store
// operations and the upstream exchange become its client spans, and the upstream gets its
// traceparent. An answer too large to record is written through `ex.sink` as it arrives (then
// ex.answer.written); without a sink it is refused with 502. `ex.received`: the request's head as
// the client sent it (HTTP/1.1), forwarded with the edits spliced in (core/exchange.hpp); empty
// renders the head from the parsed fields. The answer goes into `ex.answer` (cleared by the
// caller), which the codec keeps, so it is not carried through the coroutine frames on its way back.
boost::asio::awaitable<void> handle_request(gateway_context& ctx, worker& w, request_exchange& ex);

} // namespace idemgate::gateway::detail
