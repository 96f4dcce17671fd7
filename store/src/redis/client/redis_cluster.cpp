// SPDX-License-Identifier: Apache-2.0
#include "redis/client/redis_cluster.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;

cluster_topology::cluster_topology(std::vector<config::endpoint> seeds)
    : seeds_(std::move(seeds)), map_(std::make_shared<slot_map>())
{
}

std::shared_ptr<const slot_map> cluster_topology::map() const
{
    std::lock_guard lock(mutex_);
    return map_;
}

void cluster_topology::replace(slot_map m)
{
    auto next = std::make_shared<const slot_map>(std::move(m));
    std::lock_guard lock(mutex_);
    map_ = std::move(next);
    version_.fetch_add(1, std::memory_order_release);
}

void cluster_topology::moved(std::uint16_t slot, const config::endpoint& to)
{
    {
        std::lock_guard lock(mutex_);
        auto next = std::make_shared<slot_map>(*map_);
        std::int16_t index = -1;
        for (std::size_t i = 0; i < next->primaries.size(); ++i)
            if (next->primaries[i].host == to.host && next->primaries[i].port == to.port)
                index = static_cast<std::int16_t>(i);
        if (index < 0) {
            index = static_cast<std::int16_t>(next->primaries.size());
            next->primaries.push_back(to);
            next->online.push_back(true);
        }
        next->owner[slot] = index;
        map_ = std::move(next);
        version_.fetch_add(1, std::memory_order_release);
    }
    request_refresh();
}

std::vector<config::endpoint> cluster_topology::candidates() const
{
    auto m = map();
    std::vector<config::endpoint> out = m->primaries;
    for (const auto& s : seeds_)
        out.push_back(s);
    return out;
}

void cluster_topology::request_refresh()
{
    if (on_refresh_request)
        on_refresh_request();
}

cluster_router::cluster_router(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                               std::shared_ptr<cluster_topology> topology)
    : ex_(std::move(ex)), shared_(std::move(shared)), topology_(std::move(topology))
{
}

std::shared_ptr<redis_connection> cluster_router::connection(const config::endpoint& node)
{
    auto name = node.to_string();
    auto it = connections_.find(name);
    if (it != connections_.end())
        return it->second;
    auto conn = std::make_shared<redis_connection>(ex_, shared_, node);
    conn->start();
    connections_.emplace(std::move(name), conn);
    return conn;
}

asio::awaitable<command_result> cluster_router::execute_on(const config::endpoint& node,
                                                           std::span<const std::string_view> args)
{
    auto conn = connection(node);
    co_return co_await conn->execute(args);
}

void cluster_router::close_departed(const slot_map& map)
{
    auto kept = [&](const config::endpoint& e) {
        auto same = [&](const config::endpoint& o) { return o.host == e.host && o.port == e.port; };
        return std::any_of(map.primaries.begin(), map.primaries.end(), same);
    };
    for (auto it = connections_.begin(); it != connections_.end();) {
        // A command still awaiting its reply there keeps the connection until the next change.
        if (!kept(it->second->address()) && it->second->idle()) {
            it->second->shutdown();
            it = connections_.erase(it);
        } else {
            ++it;
        }
    }
}

asio::awaitable<command_result> cluster_router::execute(std::string_view key,
                                                        std::span<const std::string_view> args)
{
    if (topology_->version() != map_version_) {
        map_version_ = topology_->version();
        map_ = topology_->map();
        close_departed(*map_);
    }
    auto slot = cluster_slot(key);
    const auto* owner = map_->node_for(slot);
    if (!owner) {
        topology_->request_refresh();
        shared_->stats.errors_unavailable.fetch_add(1, std::memory_order_relaxed);
        co_return command_result{make_error_code(error::store_unavailable), nullptr};
    }
    config::endpoint target = *owner;
    bool asking = false;
    for (int redirects = 0;; ++redirects) {
        auto conn = connection(target);
        command_result r;
        if (asking)
            r = co_await conn->execute_asking(args);
        else
            r = co_await conn->execute(args);
        if (r.ec == error::store_unavailable || r.ec == error::store_timeout) {
            topology_->request_refresh(); // the node may have failed over
            co_return r;
        }
        if (r.ec != error::store_error_reply || !r.reply)
            co_return r;
        auto redirect = parse_redirect(std::string_view(r.reply->str, r.reply->len));
        if (!redirect)
            co_return r; // TRYAGAIN, CLUSTERDOWN, ...: a store error like any other
        if (redirects >= max_redirects) {
            shared_->stats.cluster_redirect_loops.fetch_add(1, std::memory_order_relaxed);
            co_return r;
        }
        if (redirect->ask) {
            shared_->stats.cluster_ask.fetch_add(1, std::memory_order_relaxed);
        } else {
            shared_->stats.cluster_moved.fetch_add(1, std::memory_order_relaxed);
            topology_->moved(redirect->slot, redirect->to);
        }
        asking = redirect->ask;
        target = redirect->to;
    }
}

void cluster_router::shutdown()
{
    for (auto& [name, conn] : connections_)
        conn->shutdown();
}

cluster_refresher::cluster_refresher(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                                     std::shared_ptr<cluster_topology> topology)
    : ex_(ex), shared_(shared), topology_(topology), router_(ex, shared, topology), timer_(ex)
{
}

void cluster_refresher::start()
{
    std::weak_ptr<cluster_refresher> weak = weak_from_this();
    topology_->on_refresh_request = [weak, ex = ex_] {
        asio::post(ex, [weak] {
            if (auto self = weak.lock()) {
                self->requested_ = true;
                self->timer_.cancel();
            }
        });
    };
    asio::co_spawn(ex_, run(shared_from_this()), asio::detached);
}

void cluster_refresher::shutdown()
{
    asio::post(ex_, [self = shared_from_this()] {
        self->stopped_ = true;
        self->timer_.cancel();
        self->router_.shutdown();
        self->topology_->on_refresh_request = nullptr;
    });
}

asio::awaitable<void> cluster_refresher::run(std::shared_ptr<cluster_refresher>)
{
    using namespace std::chrono_literals;
    while (!stopped_) {
        requested_ = false;
        bool complete = co_await refresh();
        if (stopped_)
            break;
        // Until the map is complete and every primary connected, look again soon.
        auto wait = complete ? shared_->cfg.topology_refresh : std::chrono::milliseconds(100);
        if (!requested_) {
            timer_.expires_after(wait);
            co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
        }
        if (requested_ && !stopped_) {
            // Redirects come in bursts: one refresh per burst.
            timer_.expires_after(20ms);
            co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }
}

asio::awaitable<bool> cluster_refresher::refresh()
{
    std::string why = "no node answered";
    std::optional<slot_map> fresh;
    for (const auto& node : topology_->candidates()) {
        std::array<std::string_view, 2> args{"CLUSTER", "SHARDS"};
        auto r = co_await router_.execute_on(node, args);
        if (stopped_)
            co_return false;
        if (r.ec) {
            why = node.to_string() + ": " + reply_text(r);
            continue;
        }
        fresh = parse_cluster_shards(*r.reply, why, shared_->cfg.tls.enabled);
        if (fresh)
            break;
    }
    shared_->stats.cluster_refreshes.fetch_add(1, std::memory_order_relaxed);
    if (!fresh) {
        shared_->stats.cluster_refresh_failures.fetch_add(1, std::memory_order_relaxed);
        topology_->set_ready(false);
        if (!logged_down_)
            log::error("redis cluster: cannot read the slot map; retrying", {{"error", why}});
        logged_down_ = true;
        co_return false;
    }
    // Ready: every slot served by a primary the cluster calls online and we are connected to.
    std::size_t covered = fresh->covered_slots();
    bool ready = covered == cluster_slots;
    for (std::size_t i = 0; i < fresh->primaries.size(); ++i)
        ready = ready && fresh->online[i] && router_.connection(fresh->primaries[i])->up();
    std::vector<redis_stats::cluster_node> nodes(fresh->primaries.size());
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        nodes[i].node = fresh->primaries[i].to_string();
        nodes[i].online = fresh->online[i];
        nodes[i].connected = router_.connection(fresh->primaries[i])->up();
    }
    for (auto owner : fresh->owner)
        if (owner >= 0)
            ++nodes[static_cast<std::size_t>(owner)].slots;
    shared_->stats.set_cluster_nodes(std::move(nodes));
    // Nodes no longer in the map (gone, or demoted to replicas): close what we hold to them. A
    // seed among them is reopened if a later read needs it (when every primary fails to answer).
    router_.close_departed(*fresh);
    shared_->stats.cluster_slots_covered.store(static_cast<std::int64_t>(covered), std::memory_order_relaxed);
    shared_->stats.cluster_primaries.store(static_cast<std::int64_t>(fresh->primaries.size()),
                                           std::memory_order_relaxed);
    topology_->replace(std::move(*fresh));
    if (ready != topology_->ready() || logged_down_) {
        if (ready)
            log::info("redis cluster: every slot is served",
                      {{"primaries", shared_->stats.cluster_primaries.load()}});
        else
            log::warn("redis cluster: not every slot is served by a reachable primary",
                      {{"slots_covered", covered}});
    }
    logged_down_ = !ready;
    topology_->set_ready(ready);
    co_return ready;
}

} // namespace idemgate::store::detail
