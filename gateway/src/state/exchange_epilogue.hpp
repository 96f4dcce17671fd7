// SPDX-License-Identifier: Apache-2.0
#pragma once
// The start and the end of every request, whatever codec read it (nginx's log phase): its IDs
// and trace begin here, and once its answer is written (or could not be) it is counted by
// outcome and by route, its latency observed, its access line written and its trace finished.
// One place, so that HTTP/1.x and HTTP/2 say the same about the same request.
#include "core/request_exchange.hpp"
#include "state/worker.hpp"

namespace idemgate::gateway::detail {

// Reads the request's IDs (its request ID, or one made for it; the trace ID of a valid
// traceparent) and, with tracing on, begins its trace. `ex.req` and `ex.env` are set.
void begin_exchange(const gateway_context& ctx, request_exchange& ex);

// Counts, logs and finishes the trace of a request whose answer was written or given up:
// `ex.refused` set, as a request the codec refused (rejected, route "none"); otherwise as
// handled, by its outcome and route, with `ex.bytes_out` and `ex.write_error` as written.
void finish_exchange(gateway_context& ctx, worker& w, request_exchange& ex);

} // namespace idemgate::gateway::detail
