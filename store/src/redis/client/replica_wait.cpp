// SPDX-License-Identifier: Apache-2.0
#include "redis/client/replica_wait.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>
#include <hiredis/hiredis.h>
#include <idemgate/common/log.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;

struct replica_waiter::batch {
    explicit batch(const asio::any_io_executor& ex) : done(ex)
    {
        done.expires_at(asio::steady_timer::time_point::max());
    }
    asio::steady_timer done; // cancelled when the WAIT answered
    config::endpoint at;     // where the barrier and the WAIT went
    long long acked = -1;
    bool finished = false;
};

replica_waiter::replica_waiter(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                               std::shared_ptr<redis_connection> data, std::shared_ptr<redis_connection> conn)
    : ex_(std::move(ex)), shared_(std::move(shared)), data_(std::move(data)), conn_(std::move(conn)),
      barrier_key_(shared_->cfg.key_prefix + ":wait-barrier"),
      timeout_(std::to_string(std::max<std::int64_t>(shared_->cfg.wait_timeout.count(), 1)))
{
}

void replica_waiter::shutdown()
{
    conn_->shutdown();
}

asio::awaitable<long long> replica_waiter::acknowledged()
{
    auto self = shared_from_this();
    // The server the reservation was answered by (no suspension since).
    const auto at = data_->address();
    if (!next_)
        next_ = std::make_shared<batch>(ex_);
    auto b = next_;
    if (!in_flight_) {
        in_flight_ = true;
        asio::co_spawn(ex_, flush(self), asio::detached);
    }
    if (!b->finished)
        co_await b->done.async_wait(asio::as_tuple(asio::use_awaitable));
    if (!b->finished || b->at.host != at.host || b->at.port != at.port)
        co_return -1;
    co_return b->acked;
}

asio::awaitable<void> replica_waiter::flush(std::shared_ptr<replica_waiter>)
{
    while (next_) {
        auto b = std::move(next_);
        next_.reset();
        b->at = conn_->address();
        std::array<std::string_view, 3> barrier{"SET", barrier_key_, "1"};
        const auto wanted = std::to_string(shared_->acks_wanted());
        std::array<std::string_view, 3> wait{"WAIT", wanted, timeout_};
        auto [set, acked] = co_await conn_->execute_pair(barrier, wait);
        // A barrier that was refused (OOM, READONLY) moved nothing: its WAIT would count
        // replicas for older writes only.
        if (!set.ec && !acked.ec && acked.reply && acked.reply->type == REDIS_REPLY_INTEGER)
            b->acked = acked.reply->integer;
        b->finished = true;
        b->done.cancel();
    }
    in_flight_ = false;
}

namespace {

log_throttle unreplicated_reservation_log;

} // namespace

asio::awaitable<bool> reservation_replicated(replica_waiter& waiter, redis_shared& shared,
                                             std::string_view key)
{
    const auto wanted = shared.acks_wanted();
    auto connected = shared.stats.connected_replicas.load(std::memory_order_relaxed);
    long long acked = -1;
    const bool too_few = connected >= 0 && connected < wanted;
    if (!too_few)
        acked = co_await waiter.acknowledged();
    if (!too_few && acked >= wanted)
        co_return true;
    shared.stats.reservations_unreplicated.fetch_add(1, std::memory_order_relaxed);
    std::uint64_t unlogged = 0;
    if (unreplicated_reservation_log.allow(shared.options.error_log_interval, unlogged)) {
        boost::json::object fields{{"key", printable_text(key)},
                                   {"min_replicas_ack", wanted},
                                   {"replicas_connected", connected},
                                   {"replicas_acknowledged", acked}};
        if (unlogged)
            fields["refusals_not_logged"] = unlogged;
        log::warn("reservation not replicated; released and refused with 503 before the upstream ran "
                  "(idemgate_reservations_unreplicated_total counts them all)",
                  std::move(fields));
    }
    co_return false;
}

asio::awaitable<void> wait_after_complete(command_router& router, redis_shared& shared, std::string_view key)
{
    auto wanted = std::to_string(shared.cfg.min_replicas_ack);
    auto timeout = std::to_string(std::max<std::int64_t>(shared.cfg.command_timeout.count() / 2, 1));
    std::array<std::string_view, 3> args{"WAIT", wanted, timeout};
    auto r = co_await router.execute(key, args);
    long long acked = -1;
    if (!r.ec && r.reply->type == REDIS_REPLY_INTEGER)
        acked = r.reply->integer;
    if (acked >= static_cast<long long>(shared.cfg.min_replicas_ack))
        co_return;
    shared.stats.records_unreplicated.fetch_add(1, std::memory_order_relaxed);
    command_result why;
    if (r.ec)
        why = std::move(r);
    shared.log_unreplicated(key, acked, why);
}

} // namespace idemgate::store::detail
