// SPDX-License-Identifier: Apache-2.0
#include "redis/redis_backend.hpp"
#include "redis/redis_health.hpp"

#include <idemgate/common/prometheus.hpp>
#include <string_view>

namespace idemgate::store::detail {

void render_redis_metrics(const redis_stats& s, std::string& out)
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
    counter("idemgate_redis_script_loads_total",
            "NOSCRIPT answers followed by the script's text (a node that did not have it yet); not errors.",
            "", double(s.script_loads.load()));
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
    prometheus::header(out, "idemgate_redis_persistence", "gauge",
                       "1: Redis keeps its data across a restart (RDB save points or AOF); 0: neither, a "
                       "restart empties it; -1: unknown (not read yet, or CONFIG GET refused).");
    prometheus::sample(out, "idemgate_redis_persistence", "", double(s.persistence.load()));
    prometheus::header(out, "idemgate_redis_refusals_total", "counter",
                       "Error replies to writes (reserve, complete) by kind; store.refusal.errors of them "
                       "within store.refusal.window put the store in the refusing state.");
    for (std::size_t i = 0; i < s.refusals.size(); ++i)
        prometheus::sample(out, "idemgate_redis_refusals_total",
                           "kind=\"" + std::string(refusal_kind_name(i)) + "\"",
                           double(s.refusals[i].load()));
    counter("idemgate_store_emptied_total",
            "Times the marker key was found gone or replaced: Redis lost its data (a restart without "
            "persistence, a flush, an eviction), and keys recorded before may run again.",
            "", double(s.emptied.load()));
    counter(
        "idemgate_records_unreplicated_total",
        "Completed records fewer than store.redis.min_replicas_ack replicas acknowledged (WAIT), or whose "
        "write's outcome is unknown (consistency strict: written again).",
        "", double(s.records_unreplicated.load()));
    counter("idemgate_store_primary_switches_total",
            "Times the sentinels named a new primary; data connections to the old one were closed.", "",
            double(s.primary_switches.load()));
    counter("idemgate_reservations_unreplicated_total",
            "consistency strict: reservations released and refused with 503 before forwarding because "
            "fewer than min_replicas_ack replicas acknowledged them.",
            "", double(s.reservations_unreplicated.load()));
    prometheus::header(out, "idemgate_completes_resent_total", "counter",
                       "consistency strict: completed records written again to the current primary "
                       "after it did not take them or the replicas did not acknowledge them: acked at "
                       "last, resent (an attempt not acknowledged yet), or dropped.");
    prometheus::sample(out, "idemgate_completes_resent_total", "result=\"acked\"",
                       double(s.completes_resent_acked.load()));
    prometheus::sample(out, "idemgate_completes_resent_total", "result=\"resent\"",
                       double(s.completes_resent_again.load()));
    prometheus::sample(out, "idemgate_completes_resent_total", "result=\"dropped\"",
                       double(s.completes_resent_dropped.load()));
    prometheus::header(out, "idemgate_completes_pending", "gauge",
                       "consistency strict: completed records waiting to be written again and acknowledged.");
    prometheus::sample(out, "idemgate_completes_pending", "", double(s.completes_pending.load()));
    prometheus::header(out, "idemgate_redis_connected_replicas", "gauge",
                       "Replicas the primary reported connected at its last ROLE; -1 unknown.");
    prometheus::sample(out, "idemgate_redis_connected_replicas", "", double(s.connected_replicas.load()));
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

} // namespace idemgate::store::detail
