// SPDX-License-Identifier: Apache-2.0
#pragma once
// Process-wide state, shared by every thread (fields are immutable or atomic): the store
// backend, the metrics, the drain flag and the live configuration generation.
#include "observability/span_exporter.hpp"
#include "state/generation.hpp"
#include "state/reload_history.hpp"

#include <atomic>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/access_log_writer.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace idemgate::gateway::detail {

// The settings a running process cannot change: its sockets, threads, store and admin API, and
// whether TLS terminates on `listen`. The only part of the boot configuration reachable from
// the request path; every other setting is read from the live generation (request_env::cfg(),
// gateway_context::live()), which a reload replaces. A reload that changes one of these logs
// that it needs a restart and keeps the running value.
struct restart_only {
    config::endpoint listen;
    config::listen_proxy_config listen_proxy; // who may say who the client is
    config::endpoint admin_listen;
    unsigned threads = 0;
    config::store_config store;
    config::admin_config admin;
    bool listen_tls = false; // TLS on `listen` (its files are reloadable; on or off is not)
    // Some route waited for in-flight duplicates at start (on_in_flight: wait): the store was
    // started with settlement notifications.
    bool settlement_notifications = false;
    // The OTLP exporter is made once (its endpoint, headers, queue), and so is the sampling.
    config::tracing_config tracing;

    static restart_only of(const config::config& cfg);
    // The top-level keys these settings come from, as config::changed_sections compares them:
    // the ones the key tables mark restart-only (reload::restart in config/src/config_keys.cpp).
    static const std::vector<std::string>& keys();
    // The parts of those sections a reload applies all the same (store.refusal, admin.shadow_window).
    static const std::vector<std::string>& reloadable_parts();
    // `next` with these settings put back to the running values.
    void keep_in(config::config& next) const;
};

// The bit gateway_context::store_lines sets for an unreachable store, beside store_condition's.
inline constexpr unsigned store_unreachable_bit = 1u << 31;

struct gateway_context {
    gateway_context(const config::config& boot_cfg, std::shared_ptr<store::backend> b)
        : boot(restart_only::of(boot_cfg)), backend(std::move(b))
    {
    }

    const restart_only boot;
    std::shared_ptr<store::backend> backend;
    metrics stats;
    fleet_registry fleet_stats; // per upstream name: ejections, failed re-resolutions
    route_registry route_stats; // per route: requests by method and status class
    std::atomic<bool> draining{false};
    std::string config_path; // the file reloads read
    reload_history reloads;  // the last reloads (GET /admin/v1/reloads)
    // Always made (its thread idles while nothing is logged): a reload may turn access_log on
    // and changes its batching (access_log_writer::apply).
    std::unique_ptr<access_log_writer> access_log;
    // Tracing on (tracing.otlp_endpoint): the exporter every sampled request's spans go to.
    std::unique_ptr<span_exporter> tracer;

    // Ready: not draining, and (readiness.store: required) the store reachable without a condition.
    bool ready() const { return !draining.load() && store_ready() && upstreams_resolved(); }
    bool store_ready() const;
    // No upstream of the live generation still waits for its names (resolve: runtime).
    bool upstreams_resolved() const;
    // One /readyz line per upstream still waiting for its names.
    std::vector<std::string> upstream_lines() const;
    // The store as /readyz tells it: one line per condition ("unavailable" first), then notes.
    // `conditions` gets the store_condition bits, plus unreachable (metrics' index 0) in bit 31.
    std::vector<std::string> store_lines(unsigned& conditions) const;
    // idemgate_store_condition from the store's state now.
    void refresh_store_gauges();

    std::shared_ptr<const live_config> live() const
    {
        std::lock_guard lock(live_mutex_);
        return live_;
    }
    void publish(std::shared_ptr<const live_config> next)
    {
        auto generation = next->generation;
        {
            std::lock_guard lock(live_mutex_);
            live_ = std::move(next);
        }
        live_generation.store(generation, std::memory_order_release);
    }
    std::atomic<std::uint64_t> live_generation{0}; // read per request; the mutex only on change

private:
    mutable std::mutex live_mutex_;
    std::shared_ptr<const live_config> live_;
};

} // namespace idemgate::gateway::detail
