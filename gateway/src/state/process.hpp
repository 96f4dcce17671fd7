#pragma once
// Process-wide state, shared by every thread (fields are immutable or atomic): the store
// backend, the metrics, the drain flag and the live configuration generation.
#include "state/generation.hpp"

#include <atomic>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/access_log_writer.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <mutex>
#include <string>

namespace idemgate::gateway::detail {

struct gateway_context {
    gateway_context(config::config c, std::shared_ptr<store::backend> b)
        : cfg(std::move(c)), backend(std::move(b))
    {
    }

    // The configuration the process started with. Request handling reads the live one
    // (worker::current); the settings a reload cannot change (listen, admin_listen, threads,
    // store, admin) are read from here.
    const config::config cfg;
    std::shared_ptr<store::backend> backend;
    metrics stats;
    fleet_registry fleet_stats; // per upstream name: ejections, failed re-resolutions
    std::atomic<bool> draining{false};
    std::string config_path;                       // the file reloads read
    std::unique_ptr<access_log_writer> access_log; // null when access_log is off
    // TLS termination on `listen` (config tls:) is on; the context is per generation
    // (live_config::listen_tls), so a reload can renew the certificate.
    bool listen_tls = false;

    bool ready() const { return !draining.load() && backend->ready(); }

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
