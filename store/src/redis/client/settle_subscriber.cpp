// SPDX-License-Identifier: Apache-2.0
#include "redis/client/settle_subscriber.hpp"

#include "redis/client/redis_cluster.hpp"
#include "redis/client/redis_sentinel.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;

settle_subscriber::settle_subscriber(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                                     settle_notifier& notifier, std::shared_ptr<cluster_topology> topology,
                                     std::shared_ptr<sentinel_monitor> monitor)
    : ex_(std::move(ex)), shared_(std::move(shared)), notifier_(notifier), topology_(std::move(topology)),
      monitor_(std::move(monitor))
{
}

void settle_subscriber::start()
{
    std::weak_ptr<settle_subscriber> weak = weak_from_this();
    subscriber_hooks hooks;
    // Called on ex_ by the connection's reader; notify() is thread-safe and posts to waiters.
    hooks.on_message = [weak](std::string_view channel, std::string_view payload) {
        auto self = weak.lock();
        if (!self)
            return;
        if (!self->removal_channel_.empty() && channel == self->removal_channel_)
            self->removal_listener_(payload);
        else
            self->notifier_.notify(channel);
    };
    hooks.on_up = [weak] {
        if (auto self = weak.lock())
            self->on_up();
    };
    hooks.on_lost = [weak] {
        if (auto self = weak.lock()) {
            ++self->generation_;
            self->subscribed_.clear();
            self->pending_subscribes_.clear();
            if (!self->removals_only_)
                self->notifier_.deactivate_all();
        }
    };
    conn_ = std::make_shared<redis_connection>(ex_, shared_, std::move(hooks));
    if (monitor_)
        conn_->set_address_source([m = monitor_] { return m->current(); });
    if (topology_) {
        conn_->set_address_source([weak] {
            auto self = weak.lock();
            auto nodes = self ? self->topology_->candidates() : std::vector<config::endpoint>{};
            if (nodes.empty())
                return config::endpoint{"127.0.0.1", 6379};
            return nodes[self->next_node_++ % nodes.size()];
        });
    }
    if (!removals_only_) {
        notifier_.on_interest = [weak, ex = ex_](const std::string& channel, bool) {
            asio::post(ex, [weak, channel] {
                if (auto self = weak.lock())
                    self->reconcile(channel);
            });
        };
    }
    conn_->start();
}

void settle_subscriber::shutdown()
{
    if (conn_)
        conn_->shutdown();
}

void settle_subscriber::on_removed(std::string channel, std::function<void(std::string_view)> listener)
{
    removal_channel_ = std::move(channel);
    removal_listener_ = std::move(listener);
}

void settle_subscriber::on_up()
{
    if (!removal_channel_.empty())
        asio::co_spawn(ex_, subscribe_removals(shared_from_this(), generation_), asio::detached);
    if (removals_only_)
        return;
    for (const auto& channel : notifier_.channels())
        reconcile(channel);
}

asio::awaitable<void> settle_subscriber::subscribe_removals(std::shared_ptr<settle_subscriber>,
                                                            std::uint64_t gen)
{
    std::array<std::string_view, 2> args{"SUBSCRIBE", removal_channel_};
    auto r = co_await conn_->execute(args);
    if (gen != generation_)
        co_return; // lost meanwhile: on_up() subscribes again
    if (r.ec) {
        // Refused (an ACL without the channel): local copies then live to their max_age.
        shared_->log_error_reply("local tier", "SUBSCRIBE", r);
        co_return;
    }
    // Removals published while this connection was down were missed: "" = forget every copy.
    removal_listener_("");
}

void settle_subscriber::reconcile(const std::string& channel)
{
    if (!conn_->up())
        return; // on_up() reconciles every channel with waiters
    bool wanted = notifier_.wanted(channel);
    bool subscribed = subscribed_.contains(channel);
    if (wanted && !subscribed) {
        subscribed_.insert(channel);
        asio::co_spawn(ex_, subscribe(shared_from_this(), channel, generation_), asio::detached);
    } else if (wanted && pending_subscribes_[channel] == 0) {
        notifier_.activate(channel); // live already: a new waiter may read the key
    } else if (!wanted && subscribed) {
        subscribed_.erase(channel);
        asio::co_spawn(ex_, unsubscribe(shared_from_this(), channel, generation_), asio::detached);
    }
    if (auto it = pending_subscribes_.find(channel); it != pending_subscribes_.end() && it->second == 0)
        pending_subscribes_.erase(it);
}

asio::awaitable<void> settle_subscriber::subscribe(std::shared_ptr<settle_subscriber>, std::string channel,
                                                   std::uint64_t gen)
{
    ++pending_subscribes_[channel];
    std::array<std::string_view, 2> args{"SUBSCRIBE", channel};
    auto r = co_await conn_->execute(args);
    if (gen != generation_)
        co_return; // the connection was lost meanwhile; on_up() subscribes again
    auto left = --pending_subscribes_[channel];
    if (r.ec) {
        // Timed out or refused (an ACL without this channel): waiters wait out their timeout.
        // Rate-limited with the store's other error replies.
        shared_->log_error_reply("wait", "SUBSCRIBE", r);
        subscribed_.erase(channel);
        co_return;
    }
    if (left == 0) {
        pending_subscribes_.erase(channel);
        reconcile(channel); // activates if still wanted, unsubscribes if not
    }
}

asio::awaitable<void> settle_subscriber::unsubscribe(std::shared_ptr<settle_subscriber>, std::string channel,
                                                     std::uint64_t)
{
    std::array<std::string_view, 2> args{"UNSUBSCRIBE", channel};
    co_await conn_->execute(args);
}

} // namespace idemgate::store::detail
