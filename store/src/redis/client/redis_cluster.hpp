// SPDX-License-Identifier: Apache-2.0
#pragma once
// Redis Cluster, private to the store library.
//
// Every command of the store touches one key (the record, or a tenant's quota keys, which share
// a hash tag), so routing is by that key's slot and nothing needs a multi-key transaction.
//   - cluster_topology (one per backend, thread-safe): the slot map, read with CLUSTER SHARDS,
//     patched by MOVED and replaced by the refresher; readiness = every slot served by an
//     online primary we are connected to.
//   - cluster_router (one per session, i.e. per I/O thread): one pipelined connection per
//     primary, opened lazily; follows MOVED (updating the map) and ASK (ASKING + retry on the
//     target) up to max_redirects; TRYAGAIN / CLUSTERDOWN / an uncovered slot are store errors.
//   - cluster_refresher (one per backend, on the first session's thread): re-reads the map
//     every topology_refresh and whenever a router asks (a redirect, a lost node).
#include "redis/client/redis_connection.hpp"

#include <array>
#include <atomic>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace idemgate::store::detail {

inline constexpr std::size_t cluster_slots = 16384;
inline constexpr int max_redirects = 5;

// The key's slot: CRC16 (XMODEM) of its hash tag (the text between the first '{' and the next
// '}', when not empty) or of the whole key, modulo 16384.
std::uint16_t cluster_slot(std::string_view key) noexcept;

// A MOVED or ASK error reply: "MOVED 3999 127.0.0.1:6381".
struct cluster_redirect {
    bool ask = false;
    std::uint16_t slot = 0;
    config::endpoint to;
};
std::optional<cluster_redirect> parse_redirect(std::string_view error_text);

struct slot_map {
    std::vector<config::endpoint> primaries;
    std::vector<bool> online;                        // per primary, as CLUSTER SHARDS says
    std::array<std::int16_t, cluster_slots> owner{}; // index into primaries; -1 = uncovered
    slot_map() { owner.fill(-1); }
    // The primary serving `slot`, or nullptr.
    const config::endpoint* node_for(std::uint16_t slot) const noexcept
    {
        auto i = owner[slot];
        return i < 0 ? nullptr : &primaries[static_cast<std::size_t>(i)];
    }
    std::size_t covered_slots() const noexcept;
};

// Builds a slot map from a CLUSTER SHARDS reply (RESP2); nullopt with `why` if malformed.
// `tls`: address each primary by its "tls-port" when it lists one.
std::optional<slot_map> parse_cluster_shards(const redisReply& reply, std::string& why, bool tls = false);

class cluster_topology {
public:
    explicit cluster_topology(std::vector<config::endpoint> seeds);

    std::shared_ptr<const slot_map> map() const;
    std::uint64_t version() const noexcept { return version_.load(std::memory_order_acquire); }
    void replace(slot_map m);
    // A MOVED: `slot` is served by `to` now (patched at once; a refresh is requested).
    void moved(std::uint16_t slot, const config::endpoint& to);
    // Nodes to ask for the map: known primaries first, then the seeds.
    std::vector<config::endpoint> candidates() const;

    // Asks the refresher to re-read the map soon. Thread-safe.
    void request_refresh();
    std::function<void()> on_refresh_request; // set once by the refresher before any session runs

    bool ready() const noexcept { return ready_.load(std::memory_order_relaxed); }
    void set_ready(bool r) noexcept { ready_.store(r, std::memory_order_relaxed); }

private:
    const std::vector<config::endpoint> seeds_;
    mutable std::mutex mutex_;
    std::shared_ptr<const slot_map> map_;
    std::atomic<std::uint64_t> version_{0};
    std::atomic<bool> ready_{false};
};

// Sends commands for keys to the right node (one per session / I/O thread).
class cluster_router final : public command_router {
public:
    cluster_router(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                   std::shared_ptr<cluster_topology> topology);

    boost::asio::awaitable<command_result> execute(std::string_view key,
                                                   std::span<const std::string_view> args) override;
    void shutdown() override;

    // A command for a given node (the refresher's CLUSTER SHARDS).
    boost::asio::awaitable<command_result> execute_on(const config::endpoint& node,
                                                      std::span<const std::string_view> args);
    // The connection to `node`, opened on first use.
    std::shared_ptr<redis_connection> connection(const config::endpoint& node);
    // Closes the idle connections to nodes that are not primaries in `map`.
    void close_departed(const slot_map& map);

private:
    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    std::shared_ptr<cluster_topology> topology_;
    std::unordered_map<std::string, std::shared_ptr<redis_connection>> connections_;
    std::shared_ptr<const slot_map> map_; // cached; re-read when the topology's version moves
    std::uint64_t map_version_ = ~std::uint64_t{0};
};

class cluster_refresher : public std::enable_shared_from_this<cluster_refresher> {
public:
    cluster_refresher(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                      std::shared_ptr<cluster_topology> topology);
    void start();
    void shutdown(); // callable from any thread

private:
    boost::asio::awaitable<void> run(std::shared_ptr<cluster_refresher> self);
    boost::asio::awaitable<bool> refresh();

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    std::shared_ptr<cluster_topology> topology_;
    cluster_router router_;
    boost::asio::steady_timer timer_;
    bool stopped_ = false;
    bool requested_ = false;
    bool logged_down_ = false;
};

} // namespace idemgate::store::detail
