// SPDX-License-Identifier: Apache-2.0
#pragma once
// A request's trace (core/request_trace.hpp) begun from its traceparent, and its server span
// finished by the request's epilogue (state/exchange_epilogue.hpp) once the answer is written.
#include "core/request_exchange.hpp"

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

class span_exporter;

// Ends a sampled request's server span (method, path, route, status, outcome; the tenant only
// with tracing.record_tenant; never the key or credentials) and hands it with its children to
// the exporter; an error when `ex.write_error` says the answer could not be written.
void finish_request_trace(span_exporter& exporter, request_exchange& ex,
                          const config::tracing_config& options);

// The trace of a new request: continues a valid `traceparent` (its sampling decision kept) or
// starts a trace, sampled at `ratio`.
request_trace begin_request_trace(std::string_view traceparent, double ratio);

} // namespace idemgate::gateway::detail
