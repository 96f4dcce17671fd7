// SPDX-License-Identifier: Apache-2.0
#pragma once
// Proxying: writes a client request for the upstream (hop-by-hop out, X-Forwarded-*, framing),
// exchanges it through the thread's upstream_pool, and rewrites the answer for the client.
#include "core/exchange.hpp"
#include "observability/request_trace.hpp"
#include "state/process.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::gateway::detail {

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

// Forwards `req` to the route's upstream and fills h.response. Returns true when the upstream
// answered (any status); false when the gateway answered 502/504 itself. An answer larger than
// limits.max_record_body sets h.big: h.response then holds its head and first bytes (or the
// 502 when it is over max_response_body; the upstream answered all the same). With `trace` (tracing
// on), the upstream gets a traceparent naming the exchange's own span, and a sampled request
// records that span. `req` is left as the client sent it: the upstream's head is written from
// `received` (the client's head as received, or empty) with the edits spliced in, the request
// ID the gateway made among the added lines.
boost::asio::awaitable<bool> forward(gateway_context& ctx, const request_env& env,
                                     const config::route_config& route, const request_type& req,
                                     const client_info& client, handled& h, std::string& scratch,
                                     request_trace* trace = nullptr, received_head received = {});

} // namespace idemgate::gateway::detail
