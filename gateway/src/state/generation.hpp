// SPDX-License-Identifier: Apache-2.0
#pragma once
// A configuration generation: one loaded configuration with what it needs at run time. A reload
// (SIGHUP, admin API) builds a new one and swaps it in whole; requests keep the one they started
// with, through their request_env.
#include "observability/route_metrics.hpp"
#include "upstream/upstream_fleet.hpp"
#include "upstream/upstream_pool.hpp"

#include <cstdint>
#include <idemgate/config/config.hpp>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio::ssl {
class context;
} // namespace boost::asio::ssl

namespace idemgate::gateway::detail {

struct upstream_tls; // upstream/upstream_tls.hpp

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
    // index = cfg.routes index, then one for requests no route matched: the process's counters
    // of each route (route_registry), which outlive this generation.
    std::vector<route_counters*> route_stats;

    // `route_index` as handled::route_index: -1 = no route matched.
    route_counters& route_stats_of(std::ptrdiff_t route_index) const noexcept
    {
        if (route_index < 0)
            return *route_stats.back();
        return *route_stats[static_cast<std::size_t>(route_index)];
    }
};

// One worker's share of a live_config: its upstream connection pools. A request holds it for
// its whole life, so a reload never pulls a pool or a route from under it.
struct request_env {
    std::shared_ptr<const live_config> live;
    std::vector<std::shared_ptr<upstream_pool>> pools; // index = live->cfg.upstreams index
    const config::config& cfg() const noexcept { return live->cfg; }
};

} // namespace idemgate::gateway::detail
