// SPDX-License-Identifier: Apache-2.0
#pragma once
// Wait mode over Redis: one subscriber connection per process (not per waiter) that SUBSCRIBEs
// to the channel of each key somebody waits for, and turns the messages the complete/release
// scripts PUBLISH into settle_notifier wake-ups. Private to the store library.
#include "redis/client/redis_connection.hpp"
#include "settle_notifier.hpp"

namespace idemgate::store::detail {
class cluster_topology;
class sentinel_monitor;
} // namespace idemgate::store::detail

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace idemgate::store::detail {

class settle_subscriber : public std::enable_shared_from_this<settle_subscriber> {
public:
    // With `topology` (cluster mode) the connection goes to a node of the cluster, another one
    // after each loss; PUBLISH reaches subscribers on every node. In cluster mode it carries only
    // the removal channel (removals_only); wait mode there uses shard_subscriber.
    settle_subscriber(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                      settle_notifier& notifier, std::shared_ptr<cluster_topology> topology = nullptr,
                      std::shared_ptr<sentinel_monitor> monitor = nullptr);

    // Also SUBSCRIBE to `channel` on every (re)connect and hand each message's payload to
    // `listener` (called on the subscriber's executor). Before start().
    void on_removed(std::string channel, std::function<void(std::string_view)> listener);
    // Only the removal channel (Redis Cluster: wait mode's channels are sharded, see
    // shard_subscriber). Before start().
    void removals_only() { removals_only_ = true; }
    // Connects (and reconnects) in the background and hooks into the notifier.
    void start();
    // Closes for good. Callable from any thread.
    void shutdown();

private:
    // Brings the subscription of `channel` in line with whether the notifier has waiters on it.
    // Runs on ex_; reconciling rather than acting on each event keeps it right whatever order
    // the events of several threads arrive in.
    void reconcile(const std::string& channel);
    boost::asio::awaitable<void> subscribe(std::shared_ptr<settle_subscriber> self, std::string channel,
                                           std::uint64_t gen);
    boost::asio::awaitable<void> unsubscribe(std::shared_ptr<settle_subscriber> self, std::string channel,
                                             std::uint64_t gen);
    void on_up();
    boost::asio::awaitable<void> subscribe_removals(std::shared_ptr<settle_subscriber> self,
                                                    std::uint64_t gen);

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    settle_notifier& notifier_;
    std::shared_ptr<cluster_topology> topology_;
    std::shared_ptr<sentinel_monitor> monitor_; // sentinel mode: follow the primary
    std::size_t next_node_ = 0;
    std::shared_ptr<redis_connection> conn_;
    std::string removal_channel_; // "" = none
    std::function<void(std::string_view)> removal_listener_;
    std::unordered_set<std::string> subscribed_;              // requested (sent) on this connection
    std::unordered_map<std::string, int> pending_subscribes_; // SUBSCRIBEs awaiting confirmation
    std::uint64_t generation_ = 0;                            // bumped per connection
    bool removals_only_ = false;
};

} // namespace idemgate::store::detail
