#include <idemgate/common/prometheus.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <iterator>
#include <tuple>

namespace idemgate::gateway {

namespace {

const char* op_name(int i)
{
    static const char* names[] = {"reserve", "complete", "release"};
    return names[i];
}

} // namespace

std::string metrics::render(bool ready, const std::function<void(std::string&)>& extra) const
{
    std::string out;
    out.reserve(8192);
    prometheus::header(out, "idemgate_requests_total", "counter", "Requests by outcome.");
    for (int i = 0; i < outcome_count; ++i)
        prometheus::sample(out, "idemgate_requests_total",
                           "outcome=\"" + std::string(to_string(static_cast<outcome>(i))) + "\"",
                           static_cast<double>(requests[i].load()));
    prometheus::header(out, "idemgate_request_duration_seconds", "histogram",
                       "Time from request header to response sent.");
    request_latency.render(out, "idemgate_request_duration_seconds", "");
    prometheus::header(out, "idemgate_store_duration_seconds", "histogram", "Store operation latency.");
    for (int i = 0; i < store_op_count; ++i)
        store_latency[i].render(out, "idemgate_store_duration_seconds",
                                std::string("op=\"") + op_name(i) + "\"");
    prometheus::header(out, "idemgate_store_errors_total", "counter", "Store operations that failed.");
    for (int i = 0; i < store_op_count; ++i)
        prometheus::sample(out, "idemgate_store_errors_total", std::string("op=\"") + op_name(i) + "\"",
                           static_cast<double>(store_errors[i].load()));
    prometheus::header(
        out, "idemgate_store_bypassed_total", "counter",
        "Guarded requests forwarded unprotected because the store failed (on_failure: pass_through).");
    prometheus::sample(out, "idemgate_store_bypassed_total", "", static_cast<double>(store_bypassed.load()));
    prometheus::header(
        out, "idemgate_records_lost_total", "counter",
        "Responses sent to the client but not recorded (complete failed); the lock expires by lock_ttl.");
    prometheus::sample(out, "idemgate_records_lost_total", "", static_cast<double>(records_lost.load()));
    prometheus::header(out, "idemgate_upstream_errors_total", "counter", "Upstream failures by kind.");
    prometheus::sample(out, "idemgate_upstream_errors_total", "kind=\"connect\"",
                       static_cast<double>(upstream_connect_errors.load()));
    prometheus::sample(out, "idemgate_upstream_errors_total", "kind=\"timeout\"",
                       static_cast<double>(upstream_timeouts.load()));
    prometheus::sample(out, "idemgate_upstream_errors_total", "kind=\"bad_response\"",
                       static_cast<double>(upstream_bad_responses.load()));
    prometheus::sample(out, "idemgate_upstream_errors_total", "kind=\"status_5xx\"",
                       static_cast<double>(upstream_5xx.load()));
    prometheus::header(out, "idemgate_upstream_connections_total", "counter",
                       "Upstream connections opened and reused.");
    prometheus::sample(out, "idemgate_upstream_connections_total", "kind=\"opened\"",
                       static_cast<double>(upstream_connections_opened.load()));
    prometheus::sample(out, "idemgate_upstream_connections_total", "kind=\"reused\"",
                       static_cast<double>(upstream_connections_reused.load()));
    prometheus::header(out, "idemgate_connections_active", "gauge", "Open client connections.");
    prometheus::sample(out, "idemgate_connections_active", "",
                       static_cast<double>(connections_active.load()));
    prometheus::header(out, "idemgate_connections_refused_total", "counter",
                       "Client connections closed at limits.max_connections.");
    prometheus::sample(out, "idemgate_connections_refused_total", "",
                       static_cast<double>(connections_refused.load()));
    prometheus::header(out, "idemgate_requests_in_flight", "gauge",
                       "Requests between header read and response sent.");
    prometheus::sample(out, "idemgate_requests_in_flight", "",
                       static_cast<double>(requests_in_flight.load()));
    prometheus::header(out, "idemgate_shadow_total", "counter",
                       "Shadow-mode requests, forwarded anyway, by what enforcement would have answered.");
    for (int i = 1; i < shadow_finding_count; ++i) {
        auto name = to_string(static_cast<shadow_finding>(i));
        name.remove_prefix(std::string_view("would_").size());
        prometheus::sample(out, "idemgate_shadow_total", "would=\"" + std::string(name) + "\"",
                           static_cast<double>(shadow[static_cast<std::size_t>(i)].load()));
    }
    prometheus::header(out, "idemgate_tenant_throttled_total", "counter",
                       "New keys refused with 429 by their tenant's quota, by limit.");
    prometheus::sample(out, "idemgate_tenant_throttled_total", "limit=\"max_in_flight\"",
                       static_cast<double>(tenant_throttled[0].load()));
    prometheus::sample(out, "idemgate_tenant_throttled_total", "limit=\"new_keys_per_second\"",
                       static_cast<double>(tenant_throttled[1].load()));
    prometheus::header(out, "idemgate_tenant_quota_errors_total", "counter",
                       "Tenant quota checks the store could not answer (on_failure decides).");
    prometheus::sample(out, "idemgate_tenant_quota_errors_total", "",
                       static_cast<double>(tenant_quota_errors.load()));
    prometheus::header(out, "idemgate_waiting", "gauge",
                       "Duplicates of in-flight requests waiting for the first answer (on_in_flight: wait).");
    prometheus::sample(out, "idemgate_waiting", "", static_cast<double>(waiting.load()));
    prometheus::header(out, "idemgate_waits_total", "counter",
                       "Waits of duplicates by how they ended: settled (replay or other answer), released "
                       "(409), timed_out (409), refused (limits.max_waiting, 503).");
    {
        static constexpr const char* ends[] = {"settled", "released", "timed_out", "refused"};
        for (std::size_t i = 0; i < 4; ++i)
            prometheus::sample(out, "idemgate_waits_total", std::string("result=\"") + ends[i] + "\"",
                               static_cast<double>(waits[i].load()));
    }
    prometheus::header(out, "idemgate_local_tier_lookups_total", "counter",
                       "Local tier lookups of keyed requests: hit (answered from the process) or miss.");
    prometheus::sample(out, "idemgate_local_tier_lookups_total", "result=\"hit\"",
                       static_cast<double>(tier_hits.load()));
    prometheus::sample(out, "idemgate_local_tier_lookups_total", "result=\"miss\"",
                       static_cast<double>(tier_misses.load()));
    prometheus::header(out, "idemgate_local_tier_evictions_total", "counter",
                       "Local tier copies evicted to stay within store.local_tier.max_bytes.");
    prometheus::sample(out, "idemgate_local_tier_evictions_total", "",
                       static_cast<double>(tier_evictions.load()));
    prometheus::header(out, "idemgate_local_tier_bytes", "gauge",
                       "Bytes held by the local tier, all threads.");
    prometheus::sample(out, "idemgate_local_tier_bytes", "", static_cast<double>(tier_bytes.load()));
    prometheus::header(out, "idemgate_config_reloads_total", "counter",
                       "Configuration reloads (SIGHUP, POST /admin/v1/reload): applied or refused.");
    prometheus::sample(out, "idemgate_config_reloads_total", "result=\"ok\"",
                       static_cast<double>(config_reloads[0].load()));
    prometheus::sample(out, "idemgate_config_reloads_total", "result=\"failed\"",
                       static_cast<double>(config_reloads[1].load()));
    prometheus::header(
        out, "idemgate_access_log_dropped_total", "counter",
        "Access log lines dropped because the writer's queue was full (access_log.queue_lines).");
    prometheus::sample(out, "idemgate_access_log_dropped_total", "",
                       static_cast<double>(access_log_dropped.load()));
    {
        static constexpr const char* failures[] = {
            "plain_http",      "not_tls", "timeout",    "protocol_version", "no_client_cert",
            "bad_client_cert", "alpn",    "peer_alert", "closed",           "other"};
        static_assert(std::size(failures) == std::tuple_size_v<decltype(tls_handshake_failures)>);
        prometheus::header(out, "idemgate_tls_handshakes_total", "counter",
                           "TLS handshakes completed on listen, by whether the session was resumed.");
        prometheus::sample(out, "idemgate_tls_handshakes_total", "resumed=\"false\"",
                           static_cast<double>(tls_handshakes[0].load()));
        prometheus::sample(out, "idemgate_tls_handshakes_total", "resumed=\"true\"",
                           static_cast<double>(tls_handshakes[1].load()));
        prometheus::header(
            out, "idemgate_tls_handshake_failures_total", "counter",
            "Client connections to listen closed because the TLS handshake failed, by reason.");
        for (std::size_t i = 0; i < std::size(failures); ++i)
            prometheus::sample(out, "idemgate_tls_handshake_failures_total",
                               std::string("reason=\"") + failures[i] + "\"",
                               static_cast<double>(tls_handshake_failures[i].load()));
        prometheus::header(out, "idemgate_upstream_tls_handshakes_total", "counter",
                           "TLS handshakes with HTTPS upstreams, by whether the session was resumed.");
        prometheus::sample(out, "idemgate_upstream_tls_handshakes_total", "resumed=\"false\"",
                           static_cast<double>(upstream_tls_handshakes[0].load()));
        prometheus::sample(out, "idemgate_upstream_tls_handshakes_total", "resumed=\"true\"",
                           static_cast<double>(upstream_tls_handshakes[1].load()));
        prometheus::header(out, "idemgate_upstream_tls_failures_total", "counter",
                           "TLS handshakes with HTTPS upstreams that failed (each also counted as a connect "
                           "error: nothing was sent).");
        prometheus::sample(out, "idemgate_upstream_tls_failures_total", "",
                           static_cast<double>(upstream_tls_failures.load()));
    }
    prometheus::header(out, "idemgate_ready", "gauge",
                       "1 when the gateway is ready (store reachable, not draining).");
    prometheus::sample(out, "idemgate_ready", "", ready ? 1.0 : 0.0);
    if (extra)
        extra(out);
    return out;
}

} // namespace idemgate::gateway
