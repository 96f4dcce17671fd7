// SPDX-License-Identifier: Apache-2.0
#pragma once
// One upstream's addresses: every address its names resolve to,
// each address's passive health (consecutive connect failures, ejection) and requests in
// flight. One fleet per upstream per configuration generation, shared by every I/O thread's
// pool: health and in-flight counts are atomics (no lock on the request path); re-resolution
// runs once per process on the control thread and posts each new set to the pools' executors.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <idemgate/common/histogram.hpp>
#include <idemgate/config/config.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace idemgate::gateway {

using tcp = boost::asio::ip::tcp;

// One address of a fleet, kept (with its health) for as long as resolutions keep returning it.
struct upstream_address {
    upstream_address(tcp::endpoint ep, std::string from_host);

    const tcp::endpoint endpoint;
    const std::string host;                 // the configured host it came from: the default TLS name (SNI)
    const std::string label;                // "10.0.0.5:8443", "[::1]:8443": logs and metric labels
    std::atomic<std::int64_t> pending{0};   // requests in flight on it, every thread
    std::atomic<std::uint32_t> failures{0}; // consecutive connect failures
    std::atomic<std::int64_t> ejected_until{0}; // steady_clock ticks (ns); skipped until then
    std::atomic<std::int64_t> ejected_at{0};    // when the last ejection began
    std::atomic<std::uint32_t> ejections{0};    // ejections while in this fleet (the admin API)

    bool healthy(std::int64_t now) const noexcept
    {
        return ejected_until.load(std::memory_order_relaxed) <= now;
    }
};

using address_set = std::vector<std::shared_ptr<upstream_address>>;

// Counters of one upstream name that outlive reloads (each generation has its own fleets).
struct fleet_counters {
    std::atomic<std::uint64_t> ejections{0};
    std::atomic<std::uint64_t> resolve_failures{0};
    latency_histogram duration; // each exchange, connecting included, answered or failed
};

// The process's fleet_counters by upstream name (the map only grows; lookups at fleet creation).
class fleet_registry {
public:
    fleet_counters& counters(const std::string& upstream);
    void render(std::string& out) const;

private:
    mutable std::mutex mutex_;
    std::map<std::string, std::unique_ptr<fleet_counters>> counters_;
};

class upstream_pool;

// What one resolution round found: every (address, configured host) pair, deduplicated, in
// the order of the configuration; or why it failed.
struct resolution {
    std::vector<std::pair<tcp::endpoint, std::string>> endpoints;
    std::string error; // "" = resolved
};

// Resolves every configured address of `up` (blocking: start-up, --check and reloads; each
// name's lookup bounded by start_lookup_deadline). IP literals need no resolver; with
// upstreams.<name>.hosts_file, host names are looked up only in that file (hosts(5) lines
// "IP name..."), read again at every resolution.
resolution resolve_now(const config::upstream_config& up);
// The same with the resolver's asynchronous lookups, the whole round under one deadline (5 s):
// the background resolution (resolve_every, resolve: runtime), on the control thread.
boost::asio::awaitable<resolution> resolve_async(boost::asio::io_context& control,
                                                 const config::upstream_config& up);

class upstream_fleet : public std::enable_shared_from_this<upstream_fleet> {
public:
    upstream_fleet(config::upstream_config cfg, const resolution& initial, fleet_counters& counters);
    fleet_counters& counters() noexcept { return counters_; }
    upstream_fleet(const upstream_fleet&) = delete;
    upstream_fleet& operator=(const upstream_fleet&) = delete;

    const config::upstream_config& config() const noexcept { return config_; }
    const std::string& name() const noexcept { return config_.name; }

    // The current set (takes the fleet's mutex: not for the request path).
    std::shared_ptr<const address_set> addresses() const;

    // Registers a pool: returns the current set, and posts every later one to `ex`.
    std::shared_ptr<const address_set> subscribe(std::weak_ptr<upstream_pool> pool,
                                                 boost::asio::any_io_executor ex);

    // Passive health, called by the pools: a connect (and TLS handshake) to `a` failed or worked.
    // eject_after_failures consecutive failures eject it for eject_for; a success ends an ejection.
    void connect_failed(upstream_address& a);
    void connect_succeeded(upstream_address& a) noexcept;

    // Makes `found` the set (addresses that remain keep their state); posts it to every pool.
    // False when the set did not change.
    bool publish(const resolution& found);

    // Resolves in the background on `control` until stop(): while the names have not resolved
    // (resolve: runtime), again and again with a growing pause; then every resolve_every (nothing
    // when it is 0).
    void start(boost::asio::io_context& control);
    // False while an upstream with resolve: runtime waits for its names (the gateway is not
    // ready); `why` gets the last lookup's error.
    bool resolved() const noexcept { return resolved_.load(std::memory_order_acquire); }
    std::string waiting_for() const;
    void stop() noexcept { stopped_.store(true, std::memory_order_relaxed); }

    // idemgate_upstream_endpoints{upstream} and idemgate_upstream_address_healthy{upstream,address}.
    void render_endpoints(std::string& out) const;
    void render_addresses(std::string& out) const;

private:
    boost::asio::awaitable<void> resolve_loop(boost::asio::io_context& control);

    struct subscriber {
        std::weak_ptr<upstream_pool> pool;
        boost::asio::any_io_executor executor;
    };

    const config::upstream_config config_;
    fleet_counters& counters_;
    std::atomic<bool> stopped_{false};
    bool failing_ = false; // the last resolution failed (logged once per failing streak)
    std::atomic<bool> resolved_{true};
    std::string unresolved_error_; // the last failed lookup's error while !resolved_ (under mutex_)
    mutable std::mutex mutex_;
    std::shared_ptr<const address_set> current_;
    std::vector<subscriber> subscribers_;
};

// The Prometheus lines of every fleet of the live configuration and the process's counters.
void render_fleet_metrics(const std::vector<std::shared_ptr<upstream_fleet>>& fleets,
                          const fleet_registry& registry, std::string& out);

} // namespace idemgate::gateway
