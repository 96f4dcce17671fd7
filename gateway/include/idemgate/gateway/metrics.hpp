// SPDX-License-Identifier: Apache-2.0
#pragma once
// Process-wide counters and histograms, exposed as Prometheus text on the admin port.
#include <array>
#include <atomic>
#include <boost/describe/enum.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <idemgate/common/enum_count.hpp>
#include <idemgate/common/histogram.hpp>
#include <idemgate/gateway/outcome.hpp>
#include <string>
#include <string_view>

namespace idemgate::gateway {

using idemgate::latency_histogram;

BOOST_DEFINE_ENUM_CLASS(store_op, reserve, complete, release);

// How a wait-mode duplicate's wait ended.
BOOST_DEFINE_ENUM_CLASS(wait_end, settled, released, timed_out, refused);
inline constexpr int store_op_count = enum_count<store_op>;

// The kinds of members IDEMGATE_GATEWAY_METRICS declares, and the labels of their series.
// The upstream answers of keyed requests by what became of the key and the status class: one
// series per completion_action and class (a status outside 100-599 counts as 5xx).
inline constexpr int upstream_outcome_count = enum_count<completion_action> * 5;
constexpr std::size_t upstream_outcome_index(completion_action action, unsigned status) noexcept
{
    unsigned status_class = status >= 100 && status < 600 ? status / 100 - 1 : 4;
    return static_cast<std::size_t>(action) * 5 + status_class;
}

namespace metric {

using counter = std::atomic<std::uint64_t>;
using gauge = std::atomic<std::int64_t>;
template<std::size_t N>
using counters = std::array<counter, N>;
template<std::size_t N>
using gauges = std::array<gauge, N>;
template<std::size_t N>
using histograms = std::array<latency_histogram, N>;

// An array member's labels, one per element in index order: made with one_per (an entry per
// enumerator of an enumeration) or std::to_array, so that their number is the number written and
// a member of another size does not compile.
template<std::size_t N>
using labels = std::array<std::string_view, N>;
// An array member's labels computed from the index; "" leaves that element out of /metrics.
using labeler = std::string (*)(std::size_t index);

inline constexpr auto store_op_labels =
    one_per<store_op, std::string_view>({"op=\"reserve\"", "op=\"complete\"", "op=\"release\""});
// By wait_end.
inline constexpr auto wait_end_labels = one_per<wait_end, std::string_view>(
    {"result=\"settled\"", "result=\"released\"", "result=\"timed_out\"", "result=\"refused\""});
// Index 0 too many in flight, 1 rate exceeded.
inline constexpr auto tenant_limit_labels =
    std::to_array<std::string_view>({"limit=\"max_in_flight\"", "limit=\"new_keys_per_second\""});
// Index 0 unreachable, then store::store_condition's bits in order (state/process.cpp checks
// their number).
inline constexpr auto store_condition_labels = std::to_array<std::string_view>(
    {"condition=\"unreachable\"", "condition=\"refusing\"", "condition=\"evicting\"", "condition=\"full\"",
     "condition=\"command_refused\""});
inline constexpr std::size_t store_condition_series = store_condition_labels.size();
// Index 0 applied, 1 refused (the old configuration kept).
inline constexpr auto reload_result_labels =
    std::to_array<std::string_view>({"result=\"ok\"", "result=\"failed\""});
// Index 0 a full handshake, 1 a resumed session.
inline constexpr auto resumed_labels =
    std::to_array<std::string_view>({"resumed=\"false\"", "resumed=\"true\""});
// By detail::tls_failure (transport/tls.cpp checks that there is one per enumerator).
inline constexpr auto tls_failure_labels = std::to_array<std::string_view>(
    {"reason=\"plain_http\"", "reason=\"not_tls\"", "reason=\"timeout\"", "reason=\"protocol_version\"",
     "reason=\"no_client_cert\"", "reason=\"bad_client_cert\"", "reason=\"alpn\"", "reason=\"peer_alert\"",
     "reason=\"closed\"", "reason=\"other\""});
// Index 0 a PROXY header from a peer outside listen.trusted_proxies, 1 none came (the bytes were
// not one, or the connection ended or timed out first), 2 a malformed one.
inline constexpr auto proxy_refusal_labels =
    std::to_array<std::string_view>({"reason=\"untrusted\"", "reason=\"missing\"", "reason=\"invalid\""});

// By detail::h2_limit (http2/, which checks that there is one per enumerator): what a misbehaving
// HTTP/2 client ran into.
inline constexpr auto h2_limit_labels =
    std::to_array<std::string_view>({"limit=\"stream_resets\"", "limit=\"control_frames\"",
                                     "limit=\"header_list\"", "limit=\"protocol\"", "limit=\"stall\""});

std::string outcome_label(std::size_t index); // outcome="<to_string(outcome)>"
// By probe_result (idempotency/reconcile_loop.cpp, which checks that there is one per
// enumerator): what a probe of a held key found.
inline constexpr auto reconcile_result_labels =
    std::to_array<std::string_view>({"result=\"found\"", "result=\"not_found\"", "result=\"retry\"",
                                     "result=\"error\"", "result=\"gave_up\""});
// Index 0 executed, 1 not_executed: how an operator resolved a held key.
inline constexpr auto held_resolution_labels =
    std::to_array<std::string_view>({"resolution=\"executed\"", "resolution=\"not_executed\""});
// By upstream_outcome_index: action="record|release|hold",code="1xx|...|5xx".
std::string upstream_outcome_label(std::size_t index);
std::string shadow_label(std::size_t index); // would="replay" ...; none is left out

} // namespace metric

// The HTTP/2 protection limits counted in idemgate_http2_limits_total.
inline constexpr std::size_t h2_limit_count = metric::h2_limit_labels.size();

// The gateway's metrics, declared once: the members of `metrics` and, in this order, what
// /metrics shows of them. FAMILY(name, type, help) opens a Prometheus family; each
// MEMBER(type, member, labels) after it is a member and its series in that family: "" or a label
// text for one series, metric::labels or a metric::labeler for an array's series.
// clang-format off
#define IDEMGATE_GATEWAY_METRICS(FAMILY, MEMBER)                                                            \
    FAMILY("idemgate_requests_total", "counter", "Requests by outcome.")                                    \
    MEMBER(metric::counters<outcome_count>, requests, metric::outcome_label)                                \
    FAMILY("idemgate_upstream_outcomes_total", "counter",                                                   \
           "Upstream answers to keyed requests by what became of the key (on_status) and status class.")    \
    MEMBER(metric::counters<upstream_outcome_count>, upstream_outcomes, metric::upstream_outcome_label)     \
    FAMILY("idemgate_reconcile_total", "counter",                                                    \
           "Probes of held keys (reconcile) by result; gave_up: given up after give_up_after.")             \
    MEMBER(metric::counters<metric::reconcile_result_labels.size()>,                                        \
           reconcile_probes, metric::reconcile_result_labels)                                               \
    FAMILY("idemgate_held_resolutions_total", "counter",                                                    \
           "Held keys an operator resolved (POST /admin/v1/records/resolve), by resolution.")              \
    MEMBER(metric::counters<metric::held_resolution_labels.size()>,                                         \
           held_resolutions, metric::held_resolution_labels)                                                \
    FAMILY("idemgate_request_duration_seconds", "histogram", "Time from request header to response sent.")  \
    MEMBER(metric::histograms<outcome_count>, request_latency, metric::outcome_label)                                                          \
    FAMILY("idemgate_store_duration_seconds", "histogram", "Store operation latency.")                      \
    MEMBER(metric::histograms<store_op_count>, store_latency, metric::store_op_labels)                      \
    FAMILY("idemgate_store_errors_total", "counter", "Store operations that failed.")                       \
    MEMBER(metric::counters<store_op_count>, store_errors, metric::store_op_labels)                         \
    FAMILY("idemgate_store_bypassed_total", "counter",                                                      \
           "Guarded requests forwarded unprotected because the store failed (on_failure: pass_through).")   \
    MEMBER(metric::counter, store_bypassed, "")                                                             \
    FAMILY("idemgate_store_condition", "gauge",                                                             \
           "1 while the store has the condition (unreachable, refusing writes, evicting, full, a command "  \
           "refused); each makes /readyz 503 unless readiness.store is ignore.")                            \
    MEMBER(metric::gauges<metric::store_condition_series>, store_conditions, metric::store_condition_labels)\
    FAMILY("idemgate_records_lost_total", "counter",                                                        \
           "Responses sent to the client but not recorded (complete failed); the lock expires by "          \
           "lock_ttl.")                                                                                     \
    MEMBER(metric::counter, records_lost, "")                                                               \
    FAMILY("idemgate_upstream_errors_total", "counter", "Upstream failures by kind.")                       \
    MEMBER(metric::counter, upstream_connect_errors, "kind=\"connect\"")                                    \
    MEMBER(metric::counter, upstream_timeouts, "kind=\"timeout\"")                                          \
    MEMBER(metric::counter, upstream_bad_responses, "kind=\"bad_response\"")                                \
    MEMBER(metric::counter, upstream_5xx, "kind=\"status_5xx\"")                                            \
    FAMILY("idemgate_upstream_connections_total", "counter", "Upstream connections opened and reused.")     \
    MEMBER(metric::counter, upstream_connections_opened, "kind=\"opened\"")                                 \
    MEMBER(metric::counter, upstream_connections_reused, "kind=\"reused\"")                                 \
    FAMILY("idemgate_connections_active", "gauge", "Open client connections.")                              \
    MEMBER(metric::gauge, connections_active, "")                                                           \
    FAMILY("idemgate_connections_refused_total", "counter",                                                 \
           "Client connections closed at limits.max_connections.")                                          \
    MEMBER(metric::counter, connections_refused, "")                                                        \
    FAMILY("idemgate_requests_in_flight", "gauge", "Requests between header read and response sent.")       \
    MEMBER(metric::gauge, requests_in_flight, "")                                                           \
    FAMILY("idemgate_shadow_total", "counter",                                                              \
           "Shadow-mode requests, forwarded anyway, by what enforcement would have answered.")              \
    MEMBER(metric::counters<shadow_finding_count>, shadow, metric::shadow_label)                            \
    FAMILY("idemgate_tenant_throttled_total", "counter",                                                    \
           "New keys refused with 429 by their tenant's quota, by limit.")                                  \
    MEMBER(metric::counters<2>, tenant_throttled, metric::tenant_limit_labels)                              \
    FAMILY("idemgate_tenant_quota_errors_total", "counter",                                                 \
           "Tenant quota checks the store could not answer (on_failure decides).")                          \
    MEMBER(metric::counter, tenant_quota_errors, "")                                                        \
    FAMILY("idemgate_waiting", "gauge",                                                                     \
           "Duplicates of in-flight requests waiting for the first answer (on_in_flight: wait).")           \
    MEMBER(metric::gauge, waiting, "")                                                                      \
    FAMILY("idemgate_waits_total", "counter",                                                               \
           "Waits of duplicates by how they ended: settled (replay or other answer), released "             \
           "(409), timed_out (409), refused (limits.max_waiting, 503).")                                    \
    MEMBER(metric::counters<enum_count<wait_end>>, waits, metric::wait_end_labels)                          \
    FAMILY("idemgate_local_tier_lookups_total", "counter",                                                  \
           "Local tier lookups of keyed requests: hit (answered from the process) or miss.")                \
    MEMBER(metric::counter, tier_hits, "result=\"hit\"")                                                    \
    MEMBER(metric::counter, tier_misses, "result=\"miss\"")                                                 \
    FAMILY("idemgate_local_tier_evictions_total", "counter",                                                \
           "Local tier copies evicted to stay within store.local_tier.max_bytes.")                          \
    MEMBER(metric::counter, tier_evictions, "")                                                             \
    FAMILY("idemgate_local_tier_bytes", "gauge", "Bytes held by the local tier, all threads.")              \
    MEMBER(metric::gauge, tier_bytes, "")                                                                   \
    FAMILY("idemgate_config_reloads_total", "counter",                                                      \
           "Configuration reloads (SIGHUP, POST /admin/v1/reload): applied or refused.")                    \
    MEMBER(metric::counters<2>, config_reloads, metric::reload_result_labels)                               \
    FAMILY("idemgate_config_last_reload_successful", "gauge",                                               \
           "1 while the last load of the configuration file (start or reload) was applied, 0 from a "       \
           "refused reload until the next applied one.")                                                    \
    MEMBER(metric::gauge, config_last_reload_successful, "")                                                \
    FAMILY("idemgate_config_last_reload_success_timestamp_seconds", "gauge",                                \
           "Unix time of the last applied load of the configuration file (start or reload).")               \
    MEMBER(metric::gauge, config_last_reload_success_time, "")                                              \
    FAMILY("idemgate_access_log_dropped_total", "counter",                                                  \
           "Access log lines dropped because the writer's queue was full (access_log.queue_lines).")        \
    MEMBER(metric::counter, access_log_dropped, "")                                                         \
    FAMILY("idemgate_log_dropped_total", "counter",                                                         \
           "Log lines other than access lines dropped because stdout took none and 4096 were waiting.")     \
    MEMBER(metric::counter, log_dropped, "")                                                                \
    FAMILY("idemgate_tls_handshakes_total", "counter",                                                      \
           "TLS handshakes completed on listen, by whether the session was resumed.")                       \
    MEMBER(metric::counters<2>, tls_handshakes, metric::resumed_labels)                                     \
    FAMILY("idemgate_tls_handshake_failures_total", "counter",                                              \
           "Client connections to listen closed because the TLS handshake failed, by reason.")              \
    MEMBER(metric::counters<metric::tls_failure_labels.size()>,                                             \
           tls_handshake_failures, metric::tls_failure_labels)                                              \
    FAMILY("idemgate_proxy_protocol_refused_total", "counter",                                              \
           "Client connections to listen closed (listen.proxy_protocol) for their PROXY header, by reason.") \
    MEMBER(metric::counters<metric::proxy_refusal_labels.size()>,                                           \
           proxy_protocol_refused, metric::proxy_refusal_labels)                                            \
    FAMILY("idemgate_upstream_tls_handshakes_total", "counter",                                             \
           "TLS handshakes with HTTPS upstreams, by whether the session was resumed.")                      \
    MEMBER(metric::counters<2>, upstream_tls_handshakes, metric::resumed_labels)                            \
    FAMILY("idemgate_upstream_tls_failures_total", "counter",                                               \
           "TLS handshakes with HTTPS upstreams that failed (each also counted as a connect "               \
           "error: nothing was sent).")                                                                     \
    MEMBER(metric::counter, upstream_tls_failures, "")                                                      \
    FAMILY("idemgate_trace_spans_total", "counter",                                                         \
           "Spans of sampled requests: accepted by the OTLP collector, dropped because the export "         \
           "queue was full, or dropped because the collector refused them or never answered.")             \
    MEMBER(metric::counter, trace_spans_exported, "result=\"exported\"")                                    \
    MEMBER(metric::counter, trace_spans_dropped_queue, "result=\"dropped_queue\"")                          \
    MEMBER(metric::counter, trace_spans_dropped_export, "result=\"dropped_export\"")                      \
    FAMILY("idemgate_http2_connections_total", "counter", "Client connections served over HTTP/2.")        \
    MEMBER(metric::counter, h2_connections, "")                                                             \
    FAMILY("idemgate_http2_streams_total", "counter", "HTTP/2 request streams opened by clients.")         \
    MEMBER(metric::counter, h2_streams, "")                                                                 \
    FAMILY("idemgate_http2_limits_total", "counter",                                                        \
           "HTTP/2 connections that hit a protection limit, by limit (counted once per connection).")       \
    MEMBER(metric::counters<h2_limit_count>, h2_limits, metric::h2_limit_labels)
// clang-format on

struct metrics {
#define IDEMGATE_METRICS_FAMILY(name, type, help)
#define IDEMGATE_METRICS_MEMBER(type, member, labels) type member{};
    IDEMGATE_GATEWAY_METRICS(IDEMGATE_METRICS_FAMILY, IDEMGATE_METRICS_MEMBER)
#undef IDEMGATE_METRICS_FAMILY
#undef IDEMGATE_METRICS_MEMBER

    void count(outcome o) noexcept
    {
        requests[static_cast<int>(o)].fetch_add(1, std::memory_order_relaxed);
    }

    // Prometheus text exposition: every family of IDEMGATE_GATEWAY_METRICS, then idemgate_ready
    // (from `ready`); `extra` appends backend-specific lines (store::backend::render_metrics).
    // `exemplars`: the histograms' bucket exemplars too (for OpenMetrics, prometheus::to_openmetrics).
    std::string render(bool ready, const std::function<void(std::string&)>& extra = {},
                       bool exemplars = false) const;
};

} // namespace idemgate::gateway
