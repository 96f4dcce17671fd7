#pragma once
// Process-wide counters and histograms, exposed as Prometheus text on the admin port.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <idemgate/common/histogram.hpp>
#include <idemgate/gateway/decision.hpp>
#include <string>

namespace idemgate::gateway {

using idemgate::latency_histogram;

enum class store_op { reserve, complete, release };

// How a wait-mode duplicate's wait ended.
enum class wait_end { settled, released, timed_out, refused };
inline constexpr int store_op_count = 3;

struct metrics {
    std::array<std::atomic<std::uint64_t>, outcome_count> requests{};
    latency_histogram request_latency;
    std::array<latency_histogram, store_op_count> store_latency;
    std::array<std::atomic<std::uint64_t>, store_op_count> store_errors{};
    std::atomic<std::uint64_t> store_bypassed{0}; // forwarded unprotected (on_failure: pass_through)
    std::atomic<std::uint64_t> upstream_connect_errors{0};
    std::atomic<std::uint64_t> upstream_timeouts{0};
    std::atomic<std::uint64_t> upstream_bad_responses{0};
    std::atomic<std::uint64_t> upstream_5xx{0};
    std::atomic<std::uint64_t> upstream_connections_opened{0};
    std::atomic<std::uint64_t> upstream_connections_reused{0};
    std::atomic<std::uint64_t> records_lost{0}; // complete failed: the answer was sent but not recorded
    std::atomic<std::int64_t> connections_active{0};
    std::atomic<std::uint64_t> connections_refused{0};
    std::atomic<std::int64_t> requests_in_flight{0};
    // Shadow-mode routes: what enforcement would have done (index = shadow_finding).
    std::array<std::atomic<std::uint64_t>, shadow_finding_count> shadow{};
    // Tenant quotas: new keys refused (index 0 too many in flight, 1 rate exceeded), and quota
    // checks that failed in the store.
    std::array<std::atomic<std::uint64_t>, 2> tenant_throttled{};
    std::atomic<std::uint64_t> tenant_quota_errors{0};
    // Wait mode: duplicates waiting now, and how waits ended (index = wait_end).
    std::atomic<std::int64_t> waiting{0};
    std::array<std::atomic<std::uint64_t>, 4> waits{};
    // Local tier (store.local_tier): lookups answered from the process or not, copies evicted
    // for room, bytes held by every thread's tier.
    std::atomic<std::uint64_t> tier_hits{0};
    std::atomic<std::uint64_t> tier_misses{0};
    std::atomic<std::uint64_t> tier_evictions{0};
    std::atomic<std::int64_t> tier_bytes{0};
    // Configuration reloads: applied, refused (the old configuration kept).
    std::array<std::atomic<std::uint64_t>, 2> config_reloads{};
    // Access log lines dropped because the writer's queue was full (access_log.queue_lines).
    std::atomic<std::uint64_t> access_log_dropped{0};

    // TLS on `listen`: handshakes done (index 0 full, 1 resumed) and failed, by
    // detail::tls_failure (plain_http, not_tls, timeout, ...).
    std::array<std::atomic<std::uint64_t>, 2> tls_handshakes{};
    std::array<std::atomic<std::uint64_t>, 10> tls_handshake_failures{};
    // HTTPS upstreams: handshakes done (0 full, 1 resumed) and failed (each also a connect error).
    std::array<std::atomic<std::uint64_t>, 2> upstream_tls_handshakes{};
    std::atomic<std::uint64_t> upstream_tls_failures{0};

    void count(outcome o) noexcept { requests[static_cast<int>(o)].fetch_add(1, std::memory_order_relaxed); }

    // Prometheus text exposition; `extra` appends backend-specific lines (store::backend::render_metrics).
    std::string render(bool ready, const std::function<void(std::string&)>& extra = {}) const;
};

} // namespace idemgate::gateway
