// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency filter: the phases of request_phases.hpp (classify -> scope -> tier_lookup ->
// reserve -> admit -> forward -> settle -> finish_answer). The only code that talks to the store and
// to decision.hpp; the connection loop hands it a fully read request and writes whatever answer
// it returns.
#include "observability/request_trace.hpp"
#include "state/worker.hpp"

#include <boost/asio/awaitable.hpp>

namespace idemgate::gateway::detail {

// Handles one complete request (body read, framing checked) on worker `w`.
// `env`: the live configuration the request runs under, with this thread's upstream pools.
// `trace`: the request's trace when tracing is on; store operations and the upstream exchange
// become its client spans, and the upstream gets its traceparent.
// `sink`: where an answer too large to record is written as it arrives (then h.written); without
// one such an answer is refused with 502.
// `received`: the request's head as the client sent it (HTTP/1.1) and the request ID made for
// it, forwarded with the edits spliced in (core/exchange.hpp); empty renders the head from the
// parsed fields.
// The answer goes into `out` (default-constructed by the caller), which the connection keeps, so
// it is not carried through the coroutine frames on its way back.
class answer_sink;
boost::asio::awaitable<void> handle_request(gateway_context& ctx, worker& w, const request_env& env,
                                            request_type& req, const client_info& client, handled& out,
                                            std::string& scratch, request_trace* trace = nullptr,
                                            answer_sink* sink = nullptr, received_head received = {});

} // namespace idemgate::gateway::detail
