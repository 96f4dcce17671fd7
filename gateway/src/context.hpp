#pragma once
// What every part of the gateway shares: the configuration, the store backend, the metrics,
// the drain flag (process-wide), and one I/O thread's own resources (worker).
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/access_log_writer.hpp>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/upstream_fleet.hpp>
#include <idemgate/gateway/upstream_pool.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace boost::asio::ssl {
class context;
} // namespace boost::asio::ssl

namespace idemgate::gateway::detail {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;
using request_type = http::request<http::string_body>;
using response_type = http::response<http::string_body>;

// One loaded configuration with what it needs at run time. A reload (SIGHUP, admin API)
// builds a new one and swaps it in whole; requests keep the one they started with.
struct live_config {
    config::config cfg;
    // index = cfg.upstreams index: each upstream's addresses and their health, shared by every
    // thread's pool; a reload makes new ones (and stops the old ones' re-resolution).
    std::vector<std::shared_ptr<upstream_fleet>> fleets;
    std::vector<std::shared_ptr<upstream_tls>> upstream_contexts; // HTTPS upstreams (null: plain)
    // TLS termination on `listen` (tls:), its files as this generation read them; null = plain.
    // A new connection handshakes with the live one; open connections keep theirs.
    std::shared_ptr<boost::asio::ssl::context> listen_tls;
    std::uint64_t generation = 0; // 1 at start, +1 per reload
    std::string sha256;           // of the file it was loaded from
};

// Process-wide state, shared by every thread (fields are immutable or atomic).
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

// One worker's share of a live_config: its upstream connection pools. A request holds it for
// its whole life, so a reload never pulls a pool or a route from under it.
struct request_env {
    std::shared_ptr<const live_config> live;
    std::vector<std::shared_ptr<upstream_pool>> pools; // index = live->cfg.upstreams index
    const config::config& cfg() const noexcept { return live->cfg; }
};

class local_tier;
struct tier_entry;

// Everything one I/O thread owns; only touched from its io_context.
struct worker {
    worker();
    ~worker();

    boost::asio::io_context ioc{1};
    tcp::acceptor acceptor{ioc};
    std::unique_ptr<store::session> store;
    std::shared_ptr<request_env> env; // the live configuration this thread serves with
    std::unique_ptr<local_tier> tier; // store.local_tier; null when off
    std::mt19937_64 rng{std::random_device{}()};
    std::unique_ptr<access_log_buffer> access_log; // this thread's batch, made on its first line
    std::thread thread;
    // The accept loop is running (false once it returned, after the drain closed the acceptor).
    std::atomic<bool> accepting{false};

    // 128 random bits as 32 hex digits: the owner token of one reservation.
    std::string new_owner_token();
    // The environment for a new request: the live configuration, with this thread's pools for
    // it (made anew after a reload; the old ones go when their last request ends).
    std::shared_ptr<request_env> current(gateway_context& ctx);
};

// The answer to one request plus what the access log says about it.
struct handled {
    response_type response;
    outcome result = outcome::pass_through;
    std::string tenant;
    std::string key;
    std::string principal; // credential scopes: the first 16 hex digits of the credentials' HMAC
    shadow_finding shadow = shadow_finding::none; // shadow-mode routes only
    // A replay from the local tier: written from these bytes; `response` then carries only the
    // status (for the access log).
    std::shared_ptr<const tier_entry> prerendered;
    bool request_sent = false; // the request was written upstream (set by forward)
    bool close_after = false;
};

// What the connection knows about the client, for X-Forwarded-* and the access log.
struct client_info {
    std::string ip;
    bool tls = false;
    // The subject (RFC 2253) of the client certificate verified against tls.client_ca_file; ""
    // without one. The seam for scopes keyed by client identity (a tenant_from: client_cert).
    std::string client_cert_subject;
    // Its common name: the tenant of routes with tenant_from: client_cert.
    std::string client_cert_cn;
};

} // namespace idemgate::gateway::detail
