// SPDX-License-Identifier: Apache-2.0
#pragma once
// Wait mode over Redis Cluster: sharded pub/sub. Private to the store library.
//
// The complete/release scripts SPUBLISH on the key's channel (the key itself, so it lives in the
// key's slot and only the nodes serving that slot carry the message). This subscriber keeps one
// subscriber connection per primary that currently serves a channel somebody waits for (opened
// on demand, closed when its last channel goes) and SSUBSCRIBEs each such channel there:
//   - the node is the slot's owner in the cluster topology's map; a MOVED answer patches the map
//     and subscribes on the node it names;
//   - the server drops a sharded subscription by itself when the slot leaves the node (the
//     "sunsubscribe" push): the channel is subscribed again where the slot lives now;
//   - a lost connection makes its channels inactive; they are subscribed again when it is back,
//     or on the slot's new owner if the map moved meanwhile (checked every retry_interval).
// A channel is activated (its waiters re-read the key) only once SSUBSCRIBE is confirmed, and
// deactivated whenever its subscription is lost, so no settlement falls between a waiter's read
// and its subscription. Whatever happens here, a waiter still ends at its own wait_timeout.
#include "redis/client/redis_connection.hpp"
#include "settle_notifier.hpp"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

namespace idemgate::store::detail {

class cluster_topology;

class shard_subscriber : public std::enable_shared_from_this<shard_subscriber> {
public:
    shard_subscriber(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                     settle_notifier& notifier, std::shared_ptr<cluster_topology> topology);

    // Hooks into the notifier; connections open as channels get waiters.
    void start();
    // Closes every connection for good. Callable from any thread.
    void shutdown();

    // How often channels that could not be subscribed (no owner in the map, node down, an
    // error answer) are tried again while somebody waits on them.
    static constexpr std::chrono::milliseconds retry_interval{200};

private:
    enum class sub_state { queued, sent, live };
    struct node {
        std::uint64_t id = 0; // distinguishes a reopened connection to the same address
        std::shared_ptr<redis_connection> conn;
        std::size_t channels = 0; // channels assigned here
        // SUNSUBSCRIBEs sent whose "sunsubscribe" answer has not come yet, per channel.
        std::unordered_map<std::string, int> own_unsubscribes;
    };
    struct channel_state {
        std::string node; // nodes_ key
        sub_state state = sub_state::queued;
        std::uint64_t attempt = 0; // of the SSUBSCRIBE in flight
        int redirects = 0;         // MOVED answers followed in a row
    };
    using channel_iterator = std::unordered_map<std::string, channel_state>::iterator;

    void reconcile(const std::string& channel);
    void assign(const std::string& channel, const config::endpoint& to, int redirects);
    void unassign(channel_iterator it);
    void send_subscribe(const std::string& channel, channel_state& c);
    boost::asio::awaitable<void> subscribe(std::shared_ptr<shard_subscriber> self, std::string channel,
                                           std::string node_name, std::uint64_t attempt);
    node& open(const config::endpoint& address);
    void on_node_up(const std::string& name, std::uint64_t id);
    void on_node_lost(const std::string& name, std::uint64_t id);
    void on_dropped(const std::string& name, std::uint64_t id, std::string_view channel);
    void arm_retry();
    void resync();

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    settle_notifier& notifier_;
    std::shared_ptr<cluster_topology> topology_;
    std::unordered_map<std::string, node> nodes_;             // by "host:port"
    std::unordered_map<std::string, channel_state> channels_; // channels with waiters
    boost::asio::steady_timer retry_;
    bool retry_armed_ = false;
    bool stopped_ = false;
    std::uint64_t next_node_id_ = 0;
    std::uint64_t next_attempt_ = 0;
};

} // namespace idemgate::store::detail
