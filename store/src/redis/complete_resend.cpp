// SPDX-License-Identifier: Apache-2.0
#include "redis/complete_resend.hpp"

#include "redis/redis_scripts.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json/object.hpp>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/record_codec.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

// Between two rounds over the queue: a failover takes seconds, a lagging replica less.
constexpr auto retry_every = std::chrono::milliseconds(100);

} // namespace

complete_resender::complete_resender(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                                     std::shared_ptr<redis_connection> data,
                                     std::shared_ptr<replica_waiter> waiter)
    : ex_(ex), shared_(std::move(shared)), data_(std::move(data)), waiter_(std::move(waiter)), wake_(ex)
{
}

asio::awaitable<command_result> complete_resender::resend(std::span<const std::string_view> args)
{
    const auto& script = resend_lua();
    std::array<std::string_view, 8> command{"EVALSHA", script.sha, "1"};
    std::size_t n = 3;
    for (auto a : args)
        command[n++] = a;
    std::span<const std::string_view> line(command.data(), n);
    auto r = co_await data_->execute(line);
    if (is_noscript(r)) {
        // A newly promoted primary lacks the script: EVAL sends its text (and caches it).
        command[0] = "EVAL";
        command[1] = script.text;
        r = co_await data_->execute(line);
    }
    if (r.ec == error::store_error_reply)
        shared_->log_error_reply("resend", "EVALSHA", r);
    co_return r;
}

asio::awaitable<boost::system::error_code> complete_resender::settle(boost::system::error_code ec,
                                                                     std::string key, std::string prefix,
                                                                     std::string value, std::string publish,
                                                                     duration record_ttl)
{
    if (ec == error::not_owner)
        co_return ec; // the lock expired and another request holds the key: nothing to keep
    if (!ec) {
        // No co_await inside a condition: GCC 12 mishandles it.
        const auto wanted = shared_->acks_wanted();
        long long acked = co_await waiter_->acknowledged();
        if (acked >= wanted)
            co_return ec;
        shared_->stats.records_unreplicated.fetch_add(1, std::memory_order_relaxed);
    } else {
        // The primary may or may not have taken it (the connection failed, or timed out): no
        // replica is known to hold it. Counted and logged as every unreplicated record is, so
        // what a failover costs adds up in idemgate_records_unreplicated_total.
        shared_->stats.records_unreplicated.fetch_add(1, std::memory_order_relaxed);
        shared_->log_unreplicated(key, -1, command_result{ec, nullptr, {}});
    }
    if (add(std::move(key), std::move(prefix), std::move(value), std::move(publish),
            clock_type::now() + record_ttl))
        co_return boost::system::error_code{};
    co_return ec ? ec : make_error_code(error::store_unavailable);
}

bool complete_resender::add(std::string key, std::string prefix, std::string value, std::string publish,
                            clock_type::time_point expires)
{
    if (stopped_ || pending_.size() >= max_pending)
        return false;
    pending_.push_back({std::move(key), std::move(prefix), std::move(value), std::move(publish), expires});
    shared_->stats.completes_pending.fetch_add(1, std::memory_order_relaxed);
    if (!running_) {
        running_ = true;
        asio::co_spawn(ex_, run(shared_from_this()), asio::detached);
    }
    return true;
}

void complete_resender::shutdown()
{
    stopped_ = true;
    wake_.cancel();
    for (const auto& p : pending_)
        drop(p, "the gateway stopped before the record was acknowledged");
    pending_.clear();
}

void complete_resender::drop(const pending_record& p, std::string_view why)
{
    shared_->stats.completes_resent_dropped.fetch_add(1, std::memory_order_relaxed);
    shared_->stats.completes_pending.fetch_sub(1, std::memory_order_relaxed);
    log::coalesced(log::level::error, "completed record dropped before the replicas acknowledged it", why,
                   {{"key", printable_text(p.key)}, {"why", why}});
}

asio::awaitable<bool> complete_resender::attempt(const pending_record& p)
{
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(p.expires - clock_type::now());
    if (left.count() <= 0) {
        drop(p, "the record expired (record_ttl) while it waited");
        co_return true;
    }
    auto px = std::to_string(left.count());
    std::array<std::string_view, 5> args{p.key, p.prefix, p.value, px, p.publish};
    auto r = co_await resend(args);
    if (r.ec || !r.reply)
        co_return false; // no primary yet (a failover under way): the next round
    if (r.reply->type == REDIS_REPLY_STRING) {
        // Another request's value. Its lock: that request was refused, or runs, or its gateway
        // died; wait for it to complete, release or expire. Its record: it settled the key.
        record other;
        auto bad = decode_stored_record(std::string_view(r.reply->str, r.reply->len), other);
        if (!bad && other.state == record_state::in_flight)
            co_return false;
        drop(p, "another request's record holds the key");
        co_return true;
    }
    if (r.reply->type != REDIS_REPLY_INTEGER || r.reply->integer != 1)
        co_return false;
    const auto wanted = shared_->acks_wanted();
    auto acked = co_await waiter_->acknowledged();
    if (acked < wanted) {
        shared_->stats.completes_resent_again.fetch_add(1, std::memory_order_relaxed);
        co_return false;
    }
    shared_->stats.completes_resent_acked.fetch_add(1, std::memory_order_relaxed);
    shared_->stats.completes_pending.fetch_sub(1, std::memory_order_relaxed);
    co_return true;
}

asio::awaitable<void> complete_resender::run(std::shared_ptr<complete_resender>)
{
    while (!stopped_ && !pending_.empty()) {
        wake_.expires_after(retry_every);
        co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
        if (stopped_)
            break;
        // One round over what waits now; records added meanwhile wait for the next round.
        auto round = pending_.size();
        for (std::size_t i = 0; i < round && !stopped_ && !pending_.empty(); ++i) {
            auto p = std::move(pending_.front());
            pending_.pop_front();
            bool settled = co_await attempt(p);
            if (settled)
                continue;
            if (stopped_)
                drop(p, "the gateway stopped before the record was acknowledged");
            else
                pending_.push_back(std::move(p));
        }
    }
    running_ = false;
}

} // namespace idemgate::store::detail
