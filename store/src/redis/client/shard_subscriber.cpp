// SPDX-License-Identifier: Apache-2.0
#include "redis/client/shard_subscriber.hpp"

#include "redis/client/redis_cluster.hpp"

#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;

shard_subscriber::shard_subscriber(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                                   settle_notifier& notifier, std::shared_ptr<cluster_topology> topology)
    : ex_(ex), shared_(std::move(shared)), notifier_(notifier), topology_(std::move(topology)), retry_(ex)
{
}

void shard_subscriber::start()
{
    std::weak_ptr<shard_subscriber> weak = weak_from_this();
    notifier_.on_interest = [weak, ex = ex_](const std::string& channel, bool) {
        asio::post(ex, [weak, channel] {
            if (auto self = weak.lock())
                self->reconcile(channel);
        });
    };
}

void shard_subscriber::shutdown()
{
    asio::post(ex_, [self = shared_from_this()] {
        self->stopped_ = true;
        self->retry_.cancel();
        for (auto& [name, n] : self->nodes_)
            n.conn->shutdown();
        self->nodes_.clear();
        self->channels_.clear();
    });
}

shard_subscriber::node& shard_subscriber::open(const config::endpoint& address)
{
    auto name = address.to_string();
    if (auto it = nodes_.find(name); it != nodes_.end())
        return it->second;
    node n;
    n.id = ++next_node_id_;
    std::weak_ptr<shard_subscriber> weak = weak_from_this();
    subscriber_hooks hooks;
    // All called on ex_ by the connection (which runs there).
    hooks.on_message = [weak](std::string_view channel, std::string_view) {
        if (auto self = weak.lock())
            self->notifier_.notify(channel);
    };
    hooks.on_up = [weak, name, id = n.id] {
        if (auto self = weak.lock())
            self->on_node_up(name, id);
    };
    hooks.on_lost = [weak, name, id = n.id] {
        if (auto self = weak.lock())
            self->on_node_lost(name, id);
    };
    hooks.on_shard_unsubscribe = [weak, name, id = n.id](std::string_view channel) {
        if (auto self = weak.lock())
            self->on_dropped(name, id, channel);
    };
    n.conn = std::make_shared<redis_connection>(ex_, shared_, std::move(hooks));
    n.conn->set_address_source([address] { return address; });
    n.conn->start();
    return nodes_.emplace(std::move(name), std::move(n)).first->second;
}

void shard_subscriber::reconcile(const std::string& channel)
{
    if (stopped_)
        return;
    bool wanted = notifier_.wanted(channel);
    auto it = channels_.find(channel);
    if (!wanted) {
        if (it != channels_.end())
            unassign(it);
        return;
    }
    if (it != channels_.end()) {
        if (it->second.state == sub_state::live)
            notifier_.activate(channel); // live already: a new waiter may read the key
        return;
    }
    auto map = topology_->map();
    const auto* owner = map->node_for(cluster_slot(channel));
    if (!owner) {
        // No map yet, or the slot is uncovered: try again shortly.
        topology_->request_refresh();
        arm_retry();
        return;
    }
    assign(channel, *owner, 0);
}

void shard_subscriber::assign(const std::string& channel, const config::endpoint& to, int redirects)
{
    auto& n = open(to);
    ++n.channels;
    auto& c = channels_[channel];
    c.node = to.to_string();
    c.state = sub_state::queued;
    c.redirects = redirects;
    if (n.conn->up())
        send_subscribe(channel, c);
    else
        arm_retry(); // on_node_up sends it; if the node stays away, resync moves it
}

void shard_subscriber::unassign(channel_iterator it)
{
    const auto& channel = it->first;
    auto& c = it->second;
    if (auto nit = nodes_.find(c.node); nit != nodes_.end()) {
        auto& n = nit->second;
        if (c.state != sub_state::queued && n.conn->up()) {
            std::array<std::string_view, 2> args{"SUNSUBSCRIBE", channel};
            if (n.conn->send_unanswered(args))
                ++n.own_unsubscribes[channel];
        }
        if (--n.channels == 0) {
            // Nobody waits on this node's channels any more: close it (reopened on demand).
            n.conn->shutdown();
            nodes_.erase(nit);
        }
    }
    channels_.erase(it);
}

void shard_subscriber::send_subscribe(const std::string& channel, channel_state& c)
{
    c.state = sub_state::sent;
    c.attempt = ++next_attempt_;
    asio::co_spawn(ex_, subscribe(shared_from_this(), channel, c.node, c.attempt), asio::detached);
}

asio::awaitable<void> shard_subscriber::subscribe(std::shared_ptr<shard_subscriber>, std::string channel,
                                                  std::string node_name, std::uint64_t attempt)
{
    auto nit = nodes_.find(node_name);
    if (nit == nodes_.end())
        co_return;
    auto conn = nit->second.conn;
    std::array<std::string_view, 2> args{"SSUBSCRIBE", channel};
    auto r = co_await conn->execute(args);
    auto it = channels_.find(channel);
    if (stopped_ || it == channels_.end() || it->second.node != node_name || it->second.attempt != attempt)
        co_return; // dropped, moved or sent again meanwhile (unassign took back what it had sent)
    auto& c = it->second;
    if (!r.ec) {
        c.state = sub_state::live;
        c.redirects = 0;
        if (notifier_.wanted(channel))
            notifier_.activate(channel);
        else
            unassign(it);
        co_return;
    }
    if (r.ec == error::store_error_reply && r.reply) {
        // Nothing was subscribed: no SUNSUBSCRIBE to send.
        c.state = sub_state::queued;
        auto redirect = parse_redirect(std::string_view(r.reply->str, r.reply->len));
        if (redirect && !redirect->ask && c.redirects < max_redirects) {
            // The slot lives elsewhere now: follow it and fix the map.
            shared_->stats.cluster_moved.fetch_add(1, std::memory_order_relaxed);
            topology_->moved(redirect->slot, redirect->to);
            int redirects = c.redirects + 1;
            unassign(it);
            if (notifier_.wanted(channel))
                assign(channel, redirect->to, redirects);
            co_return;
        }
        if (redirect && !redirect->ask)
            shared_->stats.cluster_redirect_loops.fetch_add(1, std::memory_order_relaxed);
    }
    // Timed out, refused (an ACL without the channel), CLUSTERDOWN, a redirect loop, the node
    // lost: logged (rate-limited with the store's other error replies), tried again shortly.
    // A timed-out SSUBSCRIBE may still have run: unassign takes it back.
    shared_->log_error_reply("wait", "SSUBSCRIBE", r);
    unassign(it);
    arm_retry();
}

void shard_subscriber::on_node_up(const std::string& name, std::uint64_t id)
{
    auto nit = nodes_.find(name);
    if (stopped_ || nit == nodes_.end() || nit->second.id != id)
        return;
    nit->second.own_unsubscribes.clear(); // a new connection: nothing of the old one answers
    for (auto& [channel, c] : channels_)
        if (c.node == name && c.state == sub_state::queued)
            send_subscribe(channel, c);
}

void shard_subscriber::on_node_lost(const std::string& name, std::uint64_t id)
{
    auto nit = nodes_.find(name);
    if (stopped_ || nit == nodes_.end() || nit->second.id != id)
        return;
    // Its subscriptions are gone. The connection comes back by itself (then on_node_up
    // subscribes again); if the node failed over, resync moves its channels to the new owner.
    nit->second.own_unsubscribes.clear();
    bool any = false;
    for (auto& [channel, c] : channels_) {
        if (c.node != name)
            continue;
        any = true;
        if (c.state != sub_state::queued) {
            c.state = sub_state::queued;
            notifier_.deactivate(channel);
        }
    }
    if (any) {
        topology_->request_refresh();
        arm_retry();
    }
}

void shard_subscriber::on_dropped(const std::string& name, std::uint64_t id, std::string_view channel_view)
{
    auto nit = nodes_.find(name);
    if (stopped_ || nit == nodes_.end() || nit->second.id != id)
        return;
    std::string channel(channel_view);
    auto& own = nit->second.own_unsubscribes;
    if (auto o = own.find(channel); o != own.end()) {
        // The answer to our own SUNSUBSCRIBE (the server answers in order).
        if (--o->second == 0)
            own.erase(o);
        return;
    }
    auto it = channels_.find(channel);
    if (it == channels_.end() || it->second.node != name)
        return;
    // The server dropped it: the slot left this node. Subscribe where it lives now (a stale map
    // gets a MOVED, which is followed); the waiters re-read the key once that is confirmed.
    notifier_.deactivate(channel);
    it->second.state = sub_state::queued; // nothing left to take back on this node
    unassign(it);
    topology_->request_refresh();
    reconcile(channel);
}

void shard_subscriber::arm_retry()
{
    if (retry_armed_ || stopped_)
        return;
    retry_armed_ = true;
    retry_.expires_after(retry_interval);
    std::weak_ptr<shard_subscriber> weak = weak_from_this();
    retry_.async_wait([weak](boost::system::error_code ec) {
        auto self = weak.lock();
        if (!self)
            return;
        self->retry_armed_ = false;
        if (!ec && !self->stopped_)
            self->resync();
    });
}

void shard_subscriber::resync()
{
    auto map = topology_->map();
    bool again = false;
    for (const auto& channel : notifier_.channels()) {
        auto it = channels_.find(channel);
        if (it != channels_.end() && it->second.state == sub_state::queued) {
            // Waiting for its node to come back; unless the slot lives elsewhere now.
            const auto* owner = map->node_for(cluster_slot(channel));
            if (!owner || owner->to_string() == it->second.node) {
                again = true;
                continue;
            }
            unassign(it);
            it = channels_.end();
        }
        if (it == channels_.end()) {
            reconcile(channel);
            if (!channels_.contains(channel))
                again = true;
        }
    }
    if (again)
        arm_retry();
}

} // namespace idemgate::store::detail
