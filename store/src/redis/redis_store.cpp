// SPDX-License-Identifier: Apache-2.0
#include "redis/client/redis_cluster.hpp"
#include "redis/client/redis_connection.hpp"
#include "redis/client/redis_sentinel.hpp"
#include "redis/client/replica_wait.hpp"
#include "redis/client/settle_subscriber.hpp"
#include "redis/client/shard_subscriber.hpp"
#include "redis/complete_resend.hpp"
#include "redis/health_monitor.hpp"
#include "redis/redis_backend.hpp"
#include "redis/redis_held.hpp"
#include "redis/redis_keys.hpp"
#include "redis/redis_probes.hpp"
#include "redis/redis_scripts.hpp"
#include "redis/redis_session.hpp"
#include "redis/redis_shadow.hpp"
#include "redis/redis_side_keys.hpp"

#include <array>
#include <cstdio>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/record_codec.hpp>
#include <idemgate/store/redis_store.hpp>

namespace idemgate::store {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

using detail::admit_lua;
using detail::complete_lua;
using detail::is_noscript;
using detail::lua_script;
using detail::rate_text;
using detail::release_lua;
using detail::script_args;
using detail::ttl_ms;

// Offers every capability.
class redis_session final : public session,
                            public settle_wait,
                            public tombstone_keeper,
                            public attempt_counter,
                            public probe_schedule,
                            public quota_keeper,
                            public shadow_tally {
public:
    // The first session also owns the process-wide helpers it runs on its thread (cluster
    // refresher, wait-mode subscriber, sentinel monitor, health monitor) and stops them while that
    // thread's io_context still exists.
    redis_session(std::shared_ptr<detail::command_router> router,
                  std::shared_ptr<detail::redis_shared> shared,
                  std::shared_ptr<detail::settle_subscriber> subscriber,
                  std::shared_ptr<detail::shard_subscriber> shard_subscriber,
                  std::shared_ptr<detail::cluster_refresher> refresher,
                  std::shared_ptr<detail::sentinel_monitor> monitor,
                  std::shared_ptr<detail::replica_waiter> waiter,
                  std::shared_ptr<detail::complete_resender> resender,
                  std::shared_ptr<detail::health_monitor> health)
        : router_(std::move(router)), shared_(std::move(shared)), subscriber_(std::move(subscriber)),
          shard_subscriber_(std::move(shard_subscriber)), refresher_(std::move(refresher)),
          monitor_(std::move(monitor)), waiter_(std::move(waiter)), resender_(std::move(resender)),
          health_(std::move(health)), held_(router_, shared_)
    {
    }

    ~redis_session() override
    {
        if (resender_)
            resender_->shutdown();
        router_->shutdown();
        if (waiter_)
            waiter_->shutdown();
        if (subscriber_)
            subscriber_->shutdown();
        if (shard_subscriber_)
            shard_subscriber_->shutdown();
        if (refresher_)
            refresher_->shutdown();
        if (monitor_)
            monitor_->shutdown();
        if (health_)
            health_->shutdown();
    }

    asio::awaitable<reserve_result> reserve(scope s, const record& in_flight, duration lock_ttl) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        auto value = encode_record(in_flight);
        auto ex = detail::expiry_of(lock_ttl);
        std::array<std::string_view, 7> args{"SET", key, value, "NX", ex.option, ex.value, "GET"};
        auto r = co_await router_->execute(key, args);
        // consistency strict: the upstream runs only once the replicas have the reservation;
        // otherwise it is released (owner-checked) and the request refused.
        if (!r.ec && r.reply->type == REDIS_REPLY_NIL && waiter_) {
            bool kept = co_await keep_if_replicated(s, key, in_flight.owner_token);
            if (!kept)
                co_return unreplicated_reservation();
        }
        co_return reserve_outcome(key, r);
    }

    asio::awaitable<bool> keep_if_replicated(scope s, std::string_view key, std::string_view owner_token)
    {
        bool replicated = co_await detail::reservation_replicated(*waiter_, *shared_, key);
        if (replicated)
            co_return true;
        co_await release(s, owner_token);
        co_return false;
    }

    static reserve_result unreplicated_reservation()
    {
        reserve_result out;
        out.unreplicated = true;
        return out;
    }

    // What the reserving SET's reply says. Not part of reserve's coroutine, whose frame would
    // otherwise hold a second reserve_result and grow past what Asio recycles.
    reserve_result reserve_outcome(std::string_view key, const detail::command_result& r)
    {
        reserve_result out;
        if (r.ec) {
            log_if_error_reply("reserve", "SET", r);
            note_refusal("reserve", "SET", r);
            out.ec = r.ec;
        } else if (r.reply->type == REDIS_REPLY_NIL) {
            out.acquired = true;
        } else if (r.reply->type != REDIS_REPLY_STRING) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            out.ec = make_error_code(error::store_protocol);
        } else if (auto ec =
                       decode(key, std::string_view(r.reply->str, r.reply->len), out.existing.emplace())) {
            out.existing.reset();
            out.ec = ec;
        }
        return out;
    }

    asio::awaitable<error_code> complete(scope s, const record& completed, duration record_ttl) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        std::string value;
        encode_record(completed, value); // sealed, if at all, by the protection decorator
        auto px = ttl_ms(record_ttl);
        std::array<std::string_view, 3> argv{value, px, publish_flag()}; // the record names its owner
        auto r = co_await run_script("complete", complete_lua(), 1, script_args(argv), key);
        note_refusal("complete", "EVALSHA", r);
        auto ec = owned_outcome(r);
        if (resender_) { // consistency strict
            // Named arguments: GCC 12 mishandles temporaries inside a co_await expression.
            std::string owner = owner_prefix(completed.owner_token), publish(publish_flag());
            auto settled = co_await resender_->settle(ec, std::move(key), std::move(owner), std::move(value),
                                                      std::move(publish), record_ttl);
            co_return settled;
        }
        if (!ec && shared_->cfg.min_replicas_ack > 0 && completed.state != record_state::outcome_unknown)
            co_await detail::wait_after_complete(*router_, *shared_, key);
        co_return ec;
    }

    asio::awaitable<error_code> release(scope s, std::string_view owner_token) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        auto prefix = owner_prefix(owner_token);
        std::array<std::string_view, 2> argv{prefix, publish_flag()};
        auto r = co_await run_script("release", release_lua(), 1, script_args(argv), key);
        co_return owned_outcome(r);
    }

    asio::awaitable<error_code> extend(scope s, std::string_view token, duration lock_ttl) override
    {
        co_return co_await detail::extend_lock(*router_, *shared_, s, token, lock_ttl);
    }
    asio::awaitable<error_code> bury(scope s, const record& tomb, duration ttl) override
    {
        co_return co_await detail::bury(*router_, *shared_, s, tomb, ttl);
    }
    asio::awaitable<tombstone_result> find_tombstone(scope s) override
    {
        co_return co_await detail::find_tombstone(*router_, *shared_, s);
    }
    asio::awaitable<count_result> count_execution(scope s, duration ttl) override
    {
        co_return co_await detail::count_execution(*router_, *shared_, s, ttl);
    }
    asio::awaitable<error_code> schedule_probe(std::string_view entry, std::int64_t due) override
    {
        co_return co_await detail::schedule_probe(*router_, *shared_, entry, due);
    }
    asio::awaitable<probe_claim> claim_probes(std::int64_t now, duration lease, std::size_t limit) override
    {
        co_return co_await detail::claim_probes(*router_, *shared_, now, lease, limit);
    }
    asio::awaitable<error_code> unschedule_probe(std::string_view entry) override
    {
        co_return co_await detail::unschedule_probe(*router_, *shared_, entry);
    }

    asio::awaitable<admit_result> admit(std::string_view tenant, std::string_view owner_token,
                                        const tenant_limits& limits, duration lock_ttl) override
    {
        auto keys = redis_quota_keys(shared_->cfg.key_prefix, tenant);
        auto max = std::to_string(limits.max_in_flight);
        auto rate = rate_text(limits.new_keys_per_second);
        auto ttl = ttl_ms(lock_ttl);
        std::array<std::string_view, 6> argv{keys[0], keys[1], owner_token, max, rate, ttl};
        admit_result out;
        auto r = co_await run_script("admit", admit_lua(), 2, argv);
        if (r.ec) {
            out.ec = r.ec;
            co_return out;
        }
        const auto* reply = r.reply.get();
        if (reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
            reply->element[0]->type != REDIS_REPLY_INTEGER ||
            reply->element[1]->type != REDIS_REPLY_INTEGER) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            out.ec = make_error_code(error::store_protocol);
            co_return out;
        }
        auto code = reply->element[0]->integer;
        out.verdict = code == 0   ? admission::admitted
                      : code == 1 ? admission::too_many_in_flight
                                  : admission::rate_exceeded;
        out.retry_after = duration(reply->element[1]->integer);
        co_return out;
    }

    asio::awaitable<error_code> leave(std::string_view tenant, std::string_view owner_token) override
    {
        auto keys = redis_quota_keys(shared_->cfg.key_prefix, tenant);
        std::array<std::string_view, 3> zrem{"ZREM", keys[0], owner_token};
        auto r = co_await router_->execute(keys[0], zrem);
        if (r.ec)
            log_if_error_reply("leave", "ZREM", r);
        co_return r.ec;
    }

    asio::awaitable<wait_result> wait_settled(scope s, duration timeout) override
    {
        if (!shared_->options.publish_settled) {
            wait_result out; // nothing would ever wake the waiter
            out.ec = make_error_code(error::store_unavailable);
            co_return out;
        }
        auto channel = detail::redis_key_of(*shared_, s);
        co_return co_await detail::wait_until_settled(shared_->notifier, *this, s, channel, timeout);
    }

    settle_wait* waits() noexcept override { return this; }
    tombstone_keeper* tombstones() noexcept override { return this; }
    attempt_counter* attempts() noexcept override { return this; }
    probe_schedule* probes() noexcept override { return this; }
    quota_keeper* quotas() noexcept override { return this; }
    shadow_tally* shadows() noexcept override { return this; }

    asio::awaitable<error_code> add_shadow_counts(std::string_view route, shadow_counts& since_start,
                                                  shadow_counts& window, std::int64_t now_unix_ms) override
    {
        return detail::add_shadow_counts(*router_, *shared_, route, since_start, window, now_unix_ms);
    }
    asio::awaitable<shadow_totals> read_shadow_counts(std::string_view route, std::int64_t now_unix_ms,
                                                      std::int64_t buckets) override
    {
        return detail::read_shadow_counts(*router_, *shared_, route, {now_unix_ms, buckets});
    }
    held_index* held() noexcept override { return &held_; }

    // Admin operations: GET then PTTL (two round trips; off the request path), and DEL.
    asio::awaitable<lookup_result> lookup(scope s) override
    {
        co_return co_await detail::lookup_record(*router_, *shared_, s);
    }

    asio::awaitable<error_code> remove(scope s, bool& removed) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        std::array<std::string_view, 2> del{"DEL", key};
        auto r = co_await router_->execute(key, del);
        removed = false;
        if (r.ec) {
            log_if_error_reply("remove", "DEL", r);
            co_return r.ec;
        }
        if (r.reply->type != REDIS_REPLY_INTEGER) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            co_return make_error_code(error::store_protocol);
        }
        removed = r.reply->integer > 0;
        co_await detail::remove_side_keys(*router_, *shared_, key);
        if (shared_->options.publish_removals) {
            // Every gateway's local tier forgets the record (this one's too, through its own
            // subscriber). A lost message leaves copies until their max_age: logged.
            auto channel = detail::removal_channel(shared_->cfg.key_prefix);
            std::array<std::string_view, 3> publish{"PUBLISH", channel, key};
            auto p = co_await router_->execute(key, publish);
            if (p.ec)
                log_if_error_reply("remove", "PUBLISH", p);
        }
        co_return error_code{};
    }

private:
    // The command the complete/release scripts announce a settlement with ("" = none).
    std::string_view publish_flag() const noexcept
    {
        if (!shared_->options.publish_settled)
            return "";
        return shared_->cfg.mode == config::redis_mode::cluster ? "SPUBLISH" : "PUBLISH";
    }

    // EVALSHA the script with `keys` keys followed by the other arguments (`args` holds both,
    // after `first_key` when one is given, which counts among the keys); on NOSCRIPT retry once
    // as EVAL (which caches the script on that node). Error replies are logged; the result
    // carries the reply.
    asio::awaitable<detail::command_result> run_script(std::string_view operation, const lua_script& script,
                                                       std::size_t keys,
                                                       std::span<const std::string_view> args,
                                                       std::string_view first_key = {})
    {
        std::array<std::string_view, 12> command_args{"EVALSHA", script.sha};
        auto key_count = std::to_string(keys);
        command_args[2] = key_count;
        std::size_t n = 3;
        if (!first_key.empty())
            command_args[n++] = first_key;
        for (auto a : args)
            command_args[n++] = a;
        std::span<const std::string_view> command(command_args.data(), n);
        // The first key routes the command.
        auto route_key = n > 3 ? command_args[3] : std::string_view{};
        auto r = co_await router_->execute(route_key, command);
        if (is_noscript(r)) {
            // A restarted, flushed or newly promoted node, or the target of a cluster redirect,
            // lacks the script: EVAL sends its text (and caches it there) through the same
            // routing, so it reaches the node that answered NOSCRIPT. The next EVALSHA is cheap
            // again.
            command_args[0] = "EVAL";
            command_args[1] = script.text;
            r = co_await router_->execute(route_key, command);
        }
        if (r.ec)
            log_if_error_reply(operation, "EVALSHA", r);
        co_return r;
    }

    // An error reply to a write counts towards the refusing state (timeouts and lost
    // connections do not: they are unreachability).
    void note_refusal(std::string_view operation, std::string_view command, const detail::command_result& r)
    {
        if (r.ec == error::store_error_reply && r.reply && r.reply->str)
            shared_->health.note_refusal(operation, command, std::string_view(r.reply->str, r.reply->len));
    }

    error_code decode(std::string_view key, std::string_view bytes, record& out)
    {
        return detail::decode_logged(*shared_, key, bytes, out);
    }

    // What an owner-checked script's reply says: 1 -> ok, 0 -> not_owner. A plain function, so
    // the callers await run_script directly: one coroutine frame fewer per command.
    error_code owned_outcome(const detail::command_result& r)
    {
        if (r.ec)
            return r.ec;
        if (r.reply->type != REDIS_REPLY_INTEGER) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            return make_error_code(error::store_protocol);
        }
        if (r.reply->integer == 1)
            return error_code{};
        return make_error_code(error::not_owner);
    }

    // The caller only gets store_error_reply; the server's text (OOM, READONLY, NOPERM, MOVED...)
    // goes to the log.
    void log_if_error_reply(std::string_view operation, std::string_view command,
                            const detail::command_result& r)
    {
        if (r.ec == error::store_error_reply)
            shared_->log_error_reply(operation, command, r);
    }

    std::shared_ptr<detail::command_router> router_; // shared with the health monitor
    std::shared_ptr<detail::redis_shared> shared_;
    std::shared_ptr<detail::settle_subscriber> subscriber_;      // the first session runs it
    std::shared_ptr<detail::shard_subscriber> shard_subscriber_; // cluster wait mode: likewise
    std::shared_ptr<detail::cluster_refresher> refresher_;       // cluster mode: the first session runs it
    std::shared_ptr<detail::sentinel_monitor> monitor_;          // sentinel mode: the first session runs it
    std::shared_ptr<detail::replica_waiter> waiter_;             // consistency strict
    std::shared_ptr<detail::complete_resender> resender_;        // consistency strict
    std::shared_ptr<detail::health_monitor> health_;             // health_checks: the first session runs it
    detail::redis_held held_;                                    // the index of held keys
};

} // namespace

namespace detail {

std::unique_ptr<session> make_redis_session(redis_session_parts parts)
{
    return std::make_unique<redis_session>(
        std::move(parts.router), std::move(parts.shared), std::move(parts.subscriber),
        std::move(parts.shards), std::move(parts.refresher), std::move(parts.monitor),
        std::move(parts.waiter), std::move(parts.resender), std::move(parts.health));
}

} // namespace detail

} // namespace idemgate::store
