#include <idemgate/common/prometheus.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/store/memory_store.hpp>
#include <idemgate/store/redis_store.hpp>
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

void render_redis_metrics(const store::redis_stats& s, std::string& out)
{
    auto counter = [&](std::string_view name, std::string_view help, std::string_view labels, double v) {
        prometheus::header(out, name, "counter", help);
        prometheus::sample(out, name, labels, v);
    };
    counter("idemgate_redis_commands_total", "Commands sent to Redis.", "", double(s.commands_sent.load()));
    prometheus::header(out, "idemgate_redis_errors_total", "counter", "Redis command failures by kind.");
    prometheus::sample(out, "idemgate_redis_errors_total", "kind=\"unavailable\"",
                       double(s.errors_unavailable.load()));
    prometheus::sample(out, "idemgate_redis_errors_total", "kind=\"timeout\"",
                       double(s.errors_timeout.load()));
    prometheus::sample(out, "idemgate_redis_errors_total", "kind=\"error_reply\"",
                       double(s.errors_reply.load()));
    prometheus::sample(out, "idemgate_redis_errors_total", "kind=\"protocol\"",
                       double(s.errors_protocol.load()));
    prometheus::sample(out, "idemgate_redis_errors_total", "kind=\"corrupt_record\"",
                       double(s.errors_corrupt.load()));
    counter("idemgate_redis_connects_total", "Redis connections established.", "", double(s.connects.load()));
    counter("idemgate_redis_reconnect_attempts_total", "Redis reconnect attempts.", "",
            double(s.reconnect_attempts.load()));
    prometheus::header(out, "idemgate_redis_connections_up", "gauge",
                       "I/O threads whose Redis connection is up.");
    prometheus::sample(out, "idemgate_redis_connections_up", "", double(s.connections_up.load()));
    prometheus::header(out, "idemgate_redis_eviction_safe", "gauge",
                       "1: Redis maxmemory-policy is noeviction; 0: another policy, records can be "
                       "evicted; -1: unknown (not read yet, or CONFIG GET refused).");
    prometheus::sample(out, "idemgate_redis_eviction_safe", "", double(s.eviction_safe.load()));
    counter("idemgate_records_unreplicated_total",
            "Completed records fewer than store.redis.min_replicas_ack replicas acknowledged (WAIT).", "",
            double(s.records_unreplicated.load()));
    prometheus::header(out, "idemgate_redis_cluster_redirects_total", "counter",
                       "Redis Cluster redirects followed, and commands given up after too many.");
    prometheus::sample(out, "idemgate_redis_cluster_redirects_total", "kind=\"moved\"",
                       double(s.cluster_moved.load()));
    prometheus::sample(out, "idemgate_redis_cluster_redirects_total", "kind=\"ask\"",
                       double(s.cluster_ask.load()));
    prometheus::sample(out, "idemgate_redis_cluster_redirects_total", "kind=\"too_many\"",
                       double(s.cluster_redirect_loops.load()));
    counter("idemgate_redis_cluster_topology_reads_total",
            "Slot map reads (CLUSTER SHARDS), and failed ones.", "result=\"ok\"",
            double(s.cluster_refreshes.load() - s.cluster_refresh_failures.load()));
    prometheus::sample(out, "idemgate_redis_cluster_topology_reads_total", "result=\"failed\"",
                       double(s.cluster_refresh_failures.load()));
    prometheus::header(
        out, "idemgate_redis_cluster_slots_served", "gauge",
        "Slots with a primary in the last slot map (16384 when complete; 0 outside cluster mode).");
    prometheus::sample(out, "idemgate_redis_cluster_slots_served", "",
                       double(s.cluster_slots_covered.load()));
    prometheus::header(out, "idemgate_redis_cluster_primaries", "gauge", "Primaries in the last slot map.");
    prometheus::sample(out, "idemgate_redis_cluster_primaries", "", double(s.cluster_primaries.load()));
    // One series per primary of the last slot map: bounded by the cluster's size.
    auto nodes = s.cluster_nodes();
    for (auto& n : nodes) { // a label value: escape what the text format reserves
        std::string escaped;
        for (char c : n.node) {
            if (c == '"' || c == '\\')
                escaped.push_back('\\');
            escaped.push_back(c == '\n' ? ' ' : c);
        }
        n.node = std::move(escaped);
    }
    prometheus::header(out, "idemgate_redis_cluster_node_up", "gauge",
                       "Per primary of the last slot map: 1 when the cluster calls it online and this "
                       "gateway is connected to it.");
    for (const auto& n : nodes)
        prometheus::sample(out, "idemgate_redis_cluster_node_up", "node=\"" + n.node + "\"",
                           n.online && n.connected ? 1.0 : 0.0);
    prometheus::header(out, "idemgate_redis_cluster_node_slots", "gauge",
                       "Per primary of the last slot map: the slots it serves.");
    for (const auto& n : nodes)
        prometheus::sample(out, "idemgate_redis_cluster_node_slots", "node=\"" + n.node + "\"",
                           double(n.slots));
    prometheus::header(out, "idemgate_redis_command_duration_seconds", "histogram",
                       "Redis command latency, enqueue to reply.");
    s.latency.render(out, "idemgate_redis_command_duration_seconds", "");
}

void render_memory_metrics(const store::memory_stats& s, std::string& out)
{
    prometheus::header(out, "idemgate_memory_store_entries", "gauge",
                       "Keys held by the memory store (live, or expired and not yet reclaimed).");
    prometheus::sample(out, "idemgate_memory_store_entries", "", static_cast<double>(s.entries));
    prometheus::header(out, "idemgate_memory_store_bytes", "gauge",
                       "Bytes charged against store.memory.max_bytes.");
    prometheus::sample(out, "idemgate_memory_store_bytes", "", static_cast<double>(s.bytes));
    prometheus::header(out, "idemgate_memory_store_reclaimed_total", "counter", "Expired entries removed.");
    prometheus::sample(out, "idemgate_memory_store_reclaimed_total", "", static_cast<double>(s.reclaimed));
    prometheus::header(out, "idemgate_memory_store_refused_total", "counter",
                       "New keys refused because the store was full (answered per store.on_failure).");
    prometheus::sample(out, "idemgate_memory_store_refused_total", "", static_cast<double>(s.refused_full));
}

} // namespace idemgate::gateway
