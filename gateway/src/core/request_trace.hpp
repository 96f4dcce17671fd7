// SPDX-License-Identifier: Apache-2.0
#pragma once
// One request's part in a trace (OpenTelemetry): the server span's identity and parent, whether
// it is recorded (sampled), and the client spans finished while it ran: each store operation
// and the upstream exchange. A value of the request's exchange (core/request_exchange.hpp): the
// codec begins it, the request phases and the proxy add children, and the epilogue finishes the
// server span and hands them all to the exporter (observability/request_trace.hpp).
#include <chrono>
#include <cstdint>
#include <idemgate/gateway/tracing.hpp>
#include <optional>
#include <string>
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

    // `child` (its name, kind, error, attributes, and its ID when it was made before, else a new
    // one) as a child of the server span that ran from `started` until now (steady clock). Only
    // when sampled.
    void add_child(tracing::span child, std::chrono::steady_clock::time_point started);
    void add_event(std::string name, std::vector<tracing::attribute> attributes = {});
};

} // namespace idemgate::gateway::detail
