// SPDX-License-Identifier: Apache-2.0
#pragma once
// Proxying: writes a client request for the upstream (hop-by-hop out, X-Forwarded-*, framing),
// exchanges it through the thread's upstream_pool, and rewrites the answer for the client.
#include "core/request_exchange.hpp"
#include "observability/request_trace.hpp"
#include "state/process.hpp"
#include "upstream/upstream_pool.hpp"

#include <chrono>
#include <idemgate/gateway/tracing.hpp>
#include <idemgate/store/store.hpp>
#include <string>

namespace idemgate::gateway::detail {

// Marks a record completed from a probe's answer; never recorded from an upstream's answer
// (recordable_head leaves it out), taken off again before a replay.
inline constexpr std::string_view reconciled_field = "Idemgate-Reconciled";

// Sets Content-Length to the body (the gateway always re-frames; RFC 9112 6.3). Bodyless
// statuses lose body and Content-Length; a HEAD answer keeps the upstream's Content-Length.
void reframe(response_type& res, bool head_request);

// The Host an upstream gets for a request that had none (HTTP/1.0): the upstream's name as
// configured (its TLS server_name when set) and its port unless the scheme's default, as nginx
// sends $proxy_host.
std::string upstream_authority(const config::upstream_config& upstream);

// An answer's status, reason and the fields a record keeps: not those of excluded_from_record,
// the request ID's (it belongs to one request) or the status header's (a replay says it is one).
store::stored_response recordable_head(const response_type& res, std::string_view request_id_header,
                                       std::string_view status_header);

// Forwarding `req` to the route's upstream, in two plain steps around the exchange, which the
// filter awaits itself (a forwarding coroutine between them cost a frame and its resumptions on
// every request):
//
//     auto& pool = begin_forward(ex, route, f);
//     const upstream_call call{*ex.req, f.buffers, head_request, resend, route.effective_timeouts};
//     co_await pool.exchange(call, f.result);
//     bool answered = end_forward(ctx, ex, route, f);
//
// begin_forward writes the upstream's head in `ex.scratch` from `ex.received` (the client's head as
// received, or empty) with the edits spliced in, the request ID the gateway made among the added
// lines; the request is left as the client sent it. With a trace (tracing on), the upstream gets a
// traceparent naming the exchange's own span, which end_forward records for a sampled request.
// end_forward fills ex.answer.response and returns true when the upstream answered (any status); false
// when the gateway answered 502/504 itself. An answer larger than limits.max_record_body sets
// h.big: h.response then holds its head and first bytes (or the 502 when it is over
// max_response_body; the upstream answered all the same).
struct forwarding {
    upstream_result result;
    request_buffers buffers;
    std::string traceparent;
    tracing::span_id exchange_span{};
    std::chrono::steady_clock::time_point started;
};
upstream_pool& begin_forward(request_exchange& ex, const config::route_config& route, forwarding& f);
bool end_forward(gateway_context& ctx, request_exchange& ex, const config::route_config& route,
                 forwarding& f);

// A request the gateway makes itself rather than a client's (a held key's reconciliation probe),
// sent to `route`'s upstream through this thread's pool of `env`: given the upstream's Host when
// it has none, resent on a reused connection that failed as RFC 9110 allows for an idempotent
// method (a probe is a lookup). The answer, or why there is none, in `result`.
boost::asio::awaitable<void> forward_other(const request_env& env, const config::route_config& route,
                                           request_type& req, upstream_result& result);

} // namespace idemgate::gateway::detail
