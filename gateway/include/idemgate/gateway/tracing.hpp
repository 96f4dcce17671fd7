// SPDX-License-Identifier: Apache-2.0
#pragma once
// OpenTelemetry tracing, the parts without I/O: W3C Trace Context (traceparent), the sampling
// decision, the span model and its OTLP/HTTP JSON encoding (opentelemetry-proto's JSON mapping:
// trace and span IDs as lower-case hex, times as decimal strings of Unix nanoseconds). The
// exporter that batches and sends them is observability/span_exporter.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace idemgate::gateway::tracing {

using trace_id = std::array<std::uint8_t, 16>;
using span_id = std::array<std::uint8_t, 8>;

// An incoming `traceparent` (version 00; RFC-like rules of W3C Trace Context level 1): the
// trace, the caller's span, and whether the caller sampled it. nullopt when absent or invalid.
struct parent_context {
    trace_id trace{};
    span_id span{};
    bool sampled = false;
};
std::optional<parent_context> parse_traceparent(std::string_view value) noexcept;

// "00-<trace>-<span>-<flags>" for a request we send on.
std::string format_traceparent(const trace_id& trace, const span_id& span, bool sampled);

// Parent-based: a caller's decision is kept; without one, `ratio` of new traces (by the trace
// ID's low 8 bytes, so every hop with the same ratio agrees).
bool sample(const std::optional<parent_context>& parent, const trace_id& trace, double ratio) noexcept;

// Random IDs (never all zero), from a per-thread generator seeded by the OS.
trace_id new_trace_id();
span_id new_span_id();

enum class span_kind { internal = 1, server = 2, client = 3 };

using attribute_value = std::variant<std::string, std::int64_t, double, bool>;
struct attribute {
    std::string key;
    attribute_value value;
};

struct span_event {
    std::string name;
    std::uint64_t time_unix_ns = 0;
    std::vector<attribute> attributes;
};

struct span {
    trace_id trace{};
    span_id id{};
    std::optional<span_id> parent;
    std::string name;
    span_kind kind = span_kind::internal;
    std::uint64_t start_unix_ns = 0;
    std::uint64_t end_unix_ns = 0;
    bool error = false; // status ERROR; otherwise UNSET
    std::vector<attribute> attributes;
    std::vector<span_event> events;
};

// One ExportTraceServiceRequest as JSON: one resource (its attributes in order), one scope
// ("idemgate", `service_version`), the spans in order.
std::string encode_otlp_json(const std::vector<span>& spans, const std::vector<attribute>& resource,
                             std::string_view service_version);
// The same with a resource of service.name and service.version only.
std::string encode_otlp_json(const std::vector<span>& spans, std::string_view service_name,
                             std::string_view service_version);

// A random UUID (version 4, RFC 9562 5.4) in its 8-4-4-4-12 lower-case form: a
// service.instance.id.
std::string new_instance_id();

// Unix time now in nanoseconds (system clock), for span times.
std::uint64_t now_unix_ns() noexcept;

std::string hex(const std::uint8_t* bytes, std::size_t n);

} // namespace idemgate::gateway::tracing
