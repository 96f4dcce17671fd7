// SPDX-License-Identifier: Apache-2.0
#pragma once
// One request's part in a trace (OpenTelemetry): the server span's identity and parent, whether
// it is recorded (sampled), and the client spans finished while it ran: each store operation
// and the upstream exchange. The connection makes one per request when tracing is on, the
// request phases and the proxy add children, and the connection finishes the server span after
// the answer is written and hands them all to the exporter.
#include "core/exchange.hpp"

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/tracing.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway::detail {

struct request_trace {
    tracing::trace_id trace{};
    tracing::span_id server_span{};
    std::optional<tracing::span_id> parent; // the caller's span, from its traceparent
    bool sampled = false;                   // recorded and exported; otherwise only propagated
    std::uint64_t start_unix_ns = 0;
    std::vector<tracing::span> children;
    std::vector<tracing::span_event> events; // on the server span (a wait, a hold)

    // A child of the server span that ran from `started` until now (steady clock). Only when
    // sampled.
    void add_child(std::string name, tracing::span_kind kind, std::chrono::steady_clock::time_point started,
                   bool error, std::vector<tracing::attribute> attributes,
                   std::optional<tracing::span_id> id = std::nullopt);
    void add_event(std::string name, std::vector<tracing::attribute> attributes = {});
};

class span_exporter;

// Ends a sampled request's server span (method, path, route, status, outcome; the tenant only
// with tracing.record_tenant; never the key or credentials) and hands it with its children to
// the exporter. `write_error`: the answer could not be written.
void finish_request_trace(span_exporter& exporter, request_trace& trace, const request_type& req,
                          const handled& h, const client_info& client, const config::tracing_config& options,
                          boost::system::error_code write_error);

// The trace of a new request: continues a valid `traceparent` (its sampling decision kept) or
// starts a trace, sampled at `ratio`.
request_trace begin_request_trace(std::string_view traceparent, double ratio);

} // namespace idemgate::gateway::detail
