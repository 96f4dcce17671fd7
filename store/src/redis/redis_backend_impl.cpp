// SPDX-License-Identifier: Apache-2.0
// The Redis store's backend: the process-wide part (the shared state, the cluster topology, the
// sentinel monitor), which opens each I/O thread's session and starts the process-wide helpers
// (cluster refresher, subscribers) on the first session's thread.
#include "redis/client/redis_cluster.hpp"
#include "redis/client/redis_connection.hpp"
#include "redis/client/redis_sentinel.hpp"
#include "redis/client/replica_wait.hpp"
#include "redis/client/settle_subscriber.hpp"
#include "redis/client/shard_subscriber.hpp"
#include "redis/complete_resend.hpp"
#include "redis/health_monitor.hpp"
#include "redis/redis_backend.hpp"
#include "redis/redis_keys.hpp"
#include "redis/redis_session.hpp"

#include <atomic>
#include <idemgate/store/redis_store.hpp>

namespace idemgate::store {

namespace asio = boost::asio;

namespace {

class redis_backend_impl final : public redis_backend {
public:
    redis_backend_impl(const config::redis_config& cfg, const redis_options& options)
        : shared_(std::make_shared<detail::redis_shared>(cfg, options))
    {
        shared_->health.bind(refusing_);
        if (cfg.mode == config::redis_mode::cluster)
            topology_ = std::make_shared<detail::cluster_topology>(cfg.nodes);
        if (cfg.mode == config::redis_mode::sentinel)
            monitor_ = std::make_shared<detail::sentinel_monitor>(shared_);
    }

    std::unique_ptr<session> open_session(asio::any_io_executor ex) override
    {
        // The first session's thread also runs the process-wide helpers; that session owns them.
        bool first = !first_session_opened_.exchange(true);
        std::shared_ptr<detail::cluster_refresher> refresher;
        if (topology_ && first) {
            refresher = std::make_shared<detail::cluster_refresher>(ex, shared_, topology_);
            refresher->start();
        }
        if (monitor_ && first)
            monitor_->start(ex);
        // Wait mode's channels: one subscriber connection (standalone, sentinel), or sharded
        // pub/sub on each primary with waiters (cluster). The local tier's removal channel
        // stays on classic pub/sub over one connection in every mode (PUBLISH reaches every
        // node of a cluster; the traffic is rare).
        std::shared_ptr<detail::settle_subscriber> subscriber;
        std::shared_ptr<detail::shard_subscriber> shard_subscriber;
        const bool sharded = topology_ != nullptr && shared_->options.publish_settled;
        if (sharded && first) {
            shard_subscriber =
                std::make_shared<detail::shard_subscriber>(ex, shared_, shared_->notifier, topology_);
            shard_subscriber->start();
        }
        const bool classic =
            (shared_->options.publish_settled && !sharded) || shared_->options.publish_removals;
        if (classic && first) {
            subscriber = std::make_shared<detail::settle_subscriber>(ex, shared_, shared_->notifier,
                                                                     topology_, monitor_);
            if (shared_->options.publish_removals)
                subscriber->on_removed(detail::removal_channel(shared_->cfg.key_prefix),
                                       [this](std::string_view id) { removed(id); });
            if (sharded)
                subscriber->removals_only();
            subscriber->start();
        }
        std::shared_ptr<detail::command_router> router;
        std::shared_ptr<detail::replica_waiter> waiter;
        std::shared_ptr<detail::complete_resender> resender;
        if (topology_) {
            router = std::make_shared<detail::cluster_router>(ex, shared_, topology_);
        } else {
            auto connect = [&] {
                auto conn = std::make_shared<detail::redis_connection>(ex, shared_);
                if (monitor_)
                    conn->set_address_source([m = monitor_] { return m->current(); });
                conn->start();
                return conn;
            };
            auto conn = connect();
            if (shared_->cfg.consistency == config::redis_consistency::strict) {
                waiter = std::make_shared<detail::replica_waiter>(ex, shared_, conn, connect());
                resender = std::make_shared<detail::complete_resender>(ex, shared_, conn, waiter);
            }
            router = std::make_shared<detail::single_router>(std::move(conn));
        }
        std::shared_ptr<detail::health_monitor> health;
        if (first && shared_->options.health_checks) {
            health = std::make_shared<detail::health_monitor>(ex, shared_, router);
            health->start();
        }
        return detail::make_redis_session({std::move(router), shared_, std::move(subscriber),
                                           std::move(shard_subscriber), std::move(refresher),
                                           first ? monitor_ : nullptr, std::move(waiter), std::move(resender),
                                           std::move(health)});
    }

    bool ready() const override
    {
        if (topology_)
            return topology_->ready();
        return shared_->stats.connections_up.load(std::memory_order_relaxed) > 0;
    }
    std::string_view kind() const noexcept override { return "redis"; }
    store_status status() const override { return shared_->health.status(); }
    void set_refusal_policy(const refusal_policy& policy) override { shared_->health.set_policy(policy); }
    std::string record_id(scope s) const override { return detail::redis_key_of(*shared_, s); }
    void record_unreadable(std::string_view id, std::size_t bytes, std::string_view why) const override
    {
        shared_->stats.errors_corrupt.fetch_add(1, std::memory_order_relaxed);
        shared_->log_corrupt_record(id, bytes, why);
    }
    const redis_stats& stats() const noexcept override { return shared_->stats; }
    void render_metrics(std::string& out) const override
    {
        detail::render_redis_metrics(shared_->stats, out);
    }

private:
    std::shared_ptr<detail::redis_shared> shared_;
    std::shared_ptr<detail::cluster_topology> topology_; // cluster mode only
    std::shared_ptr<detail::sentinel_monitor> monitor_;  // sentinel mode only
    std::atomic<bool> first_session_opened_{false};
};

} // namespace

std::shared_ptr<redis_backend> make_redis_backend(const config::redis_config& cfg,
                                                  const redis_options& options)
{
    return std::make_shared<redis_backend_impl>(cfg, options);
}

} // namespace idemgate::store
