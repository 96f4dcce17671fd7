// SPDX-License-Identifier: Apache-2.0
#include "redis/client/redis_connection.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <exception>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/recycled.hpp>
#include <optional>
#include <utility>
#include <vector>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;
using boost::system::error_code;
using clock = std::chrono::steady_clock;

void reply_deleter::operator()(redisReply* r) const noexcept
{
    freeReplyObject(r);
}

namespace {

constexpr auto initial_backoff = std::chrono::milliseconds(25);
constexpr auto min_backoff = std::chrono::milliseconds(5);
void log_spawn_failure(std::exception_ptr e)
{
    if (!e)
        return;
    try {
        std::rethrow_exception(e);
    } catch (const std::exception& ex) {
        log::error("redis connection coroutine failed", {{"error", ex.what()}});
    } catch (...) {
        log::error("redis connection coroutine failed");
    }
}

} // namespace

redis_connection::redis_connection(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared)
    : redis_connection(std::move(ex), shared, shared->cfg.address)
{
}

redis_connection::redis_connection(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                                   config::endpoint address)
    : ex_(std::move(ex)), shared_(std::move(shared)), address_(std::move(address)),
      transport_(ex_, shared_->tls), wake_writer_(ex_), lost_(ex_), backoff_(ex_), connect_deadline_(ex_),
      sweep_(ex_), policy_timer_(ex_), role_timer_(ex_)
{
}

redis_connection::redis_connection(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                                   subscriber_hooks hooks)
    : redis_connection(std::move(ex), std::move(shared))
{
    subscriber_ = std::move(hooks);
}

void redis_connection::set_address_source(std::function<config::endpoint()> source)
{
    address_source_ = std::move(source);
}

void redis_connection::start()
{
    auto self = shared_from_this();
    // Commands issued before run() begins wait for this first attempt rather than failing.
    connecting_ = true;
    // Sentinel mode: data and subscriber connections follow the primary the sentinels name.
    follows_primary_ = address_source_ && !to_sentinel_ && shared_->cfg.mode == config::redis_mode::sentinel;
    if (follows_primary_)
        shared_->add_follower(self);
    asio::co_spawn(ex_, run(self), log_spawn_failure);
}

void redis_connection::shutdown()
{
    asio::post(ex_, [self = shared_from_this()] { self->do_shutdown(); });
}

void redis_connection::do_shutdown()
{
    if (stopped_)
        return;
    stopped_ = true;
    on_lost(generation_, "shutdown", {});
    backoff_.cancel();
    connect_deadline_.cancel();
    policy_timer_.cancel();
    role_timer_.cancel();
    ++sweep_generation_;
    sweep_armed_ = false;
    sweep_.cancel();
    fail_pending(make_error_code(error::store_unavailable));
}

asio::awaitable<void> redis_connection::run(std::shared_ptr<redis_connection> self)
{
    // Never below a few milliseconds: a zero backoff would spin on a dead server.
    const auto backoff_max =
        std::max<std::chrono::milliseconds>(shared_->cfg.reconnect_backoff_max, min_backoff);
    auto backoff = std::min<std::chrono::milliseconds>(initial_backoff, backoff_max);
    bool first_attempt = true;
    bool reported_down = false; // log a failure streak once, not every attempt
    while (!stopped_) {
        if (!first_attempt)
            bump(shared_->stats.reconnect_attempts);
        first_attempt = false;

        connecting_ = true;
        auto ec = co_await connect();
        if (!ec && !stopped_) {
            auto gen = ++generation_;
            connected_ = true;
            asio::co_spawn(ex_, read_loop(self, gen), log_spawn_failure);
            asio::co_spawn(ex_, write_loop(self, gen), log_spawn_failure);
            ec = co_await handshake();
            if (!ec && connected_ && !stopped_ && !address_current()) {
                // The sentinels named another primary while this attempt was under way.
                handshake_error_ = "the sentinels name another primary now";
                ec = make_error_code(error::store_unavailable);
            }
            if (!ec && connected_ && !stopped_) {
                seen_primary_epoch_ = shared_->primary_epoch.load(std::memory_order_acquire);
                up_ = true;
                connecting_ = false;
                send_waiting();
                bump(shared_->stats.connects);
                if (!subscriber_)
                    shared_->stats.connections_up.fetch_add(1, std::memory_order_relaxed);
                backoff = std::min<std::chrono::milliseconds>(initial_backoff, backoff_max);
                if (reported_down)
                    log::coalesced(log::level::info, "redis reconnected", address_.to_string(),
                                   {{"address", address_.to_string()}});
                reported_down = false;
                if (subscriber_) {
                    if (subscriber_->on_up)
                        subscriber_->on_up();
                } else {
                    if (!shared_->version_checked.exchange(true))
                        asio::co_spawn(ex_, check_version(self), log_spawn_failure);
                    // On every (re)connect: a restarted or failed-over server may evict (defect 10).
                    asio::co_spawn(ex_, watch_eviction_policy(self, gen), log_spawn_failure);
                    if (shared_->cfg.mode == config::redis_mode::sentinel ||
                        (shared_->cfg.mode == config::redis_mode::standalone &&
                         shared_->cfg.consistency == config::redis_consistency::strict))
                        asio::co_spawn(ex_, watch_role(self, gen), log_spawn_failure);
                }

                while (connected_ && !stopped_) {
                    lost_.expires_at(clock::time_point::max());
                    co_await lost_.async_wait(as_tuple(use_awaitable));
                }
                up_ = false;
                if (!subscriber_)
                    shared_->stats.connections_up.fetch_sub(1, std::memory_order_relaxed);
                if (!stopped_) {
                    log::coalesced(log::level::warn, "redis connection lost", address_.to_string(),
                                   {{"address", address_.to_string()}});
                    reported_down = true;
                }
            }
        }
        if (ec && !stopped_ && !reported_down) {
            // Once per failure streak; AUTH/SELECT/PING failures say what the server answered.
            auto why = handshake_error_.empty() ? ec.message() : handshake_error_;
            // E.g. a server that refused our client certificate in a TLS alert after the handshake.
            if (!transport_.failure().empty() && why.find(transport_.failure()) == std::string::npos)
                why += "; " + transport_.failure();
            log::coalesced(log::level::error, "redis unreachable; retrying with backoff",
                           address_.to_string(), {{"address", address_.to_string()}, {"error", why}});
            reported_down = true;
        }
        handshake_error_.clear();
        if (std::exchange(prompt_reconnect_, false) && !stopped_) {
            // on_lost chose to connect again at once: connecting_ stayed on, so the commands that
            // came since wait in waiting_ for this attempt; only those already sent fail (their
            // outcome is unknown).
            fail_sent(make_error_code(error::store_unavailable));
            continue;
        }
        connecting_ = false;
        on_lost(generation_, "reconnect", {});
        fail_pending(make_error_code(error::store_unavailable));
        if (stopped_)
            break;
        backoff_.expires_after(backoff);
        co_await backoff_.async_wait(as_tuple(use_awaitable));
        backoff = std::min<std::chrono::milliseconds>(backoff * 2, backoff_max);
    }
}

asio::awaitable<command_result> redis_connection::execute(std::span<const std::string_view> args)
{
    return enqueue(args, false, false);
}

asio::awaitable<command_result> redis_connection::execute_asking(std::span<const std::string_view> args)
{
    return enqueue(args, false, true);
}

bool redis_connection::send_unanswered(std::span<const std::string_view> args)
{
    if (stopped_ || !connected_ || !up_ || out_.size() >= shared_->max_pending_bytes)
        return false;
    append_command(out_, args);
    if (writer_idle_) {
        writer_idle_ = false;
        wake_writer_.cancel();
    }
    bump(shared_->stats.commands_sent);
    return true;
}

asio::awaitable<command_result> redis_connection::enqueue(std::span<const std::string_view> args,
                                                          bool handshake, bool asking)
{
    // Not a coroutine itself: one frame fewer for every command. The connection outlives it.
    return finish(submit(args, handshake, asking), shared_from_this());
}

std::shared_ptr<redis_connection::pending_command>
redis_connection::submit(std::span<const std::string_view> args, bool handshake, bool asking)
{
    auto& stats = shared_->stats;
    // Never a command to an address the sentinels no longer name.
    if (follows_primary_ && !handshake &&
        seen_primary_epoch_ != shared_->primary_epoch.load(std::memory_order_acquire))
        leave_if_moved();
    // While a connect attempt is under way (start-up, or right after a loss) a command waits
    // for it within its own deadline rather than failing; otherwise down means fail fast.
    bool send_now = connected_ && (up_ || handshake);
    bool wait_for_connect = !send_now && connecting_ && !handshake;
    if (stopped_ || (!send_now && !wait_for_connect) ||
        pending_.size() + waiting_.size() >= shared_->max_pending ||
        out_.size() >= shared_->max_pending_bytes) {
        bump(stats.errors_unavailable);
        return nullptr;
    }

    // In a block this thread reuses: one command per store operation, two per first execution.
    auto cmd = std::allocate_shared<pending_command>(recycling_allocator<pending_command>(), ex_);
    cmd->sent = clock::now();
    cmd->deadline = cmd->sent + shared_->cfg.command_timeout;
    cmd->event.expires_at(clock::time_point::max());
    arm_sweep(cmd->deadline);
    if (asking && send_now) {
        // Redis Cluster ASK redirect: ASKING must come right before the command on the same
        // connection; both are queued here in one go, so nothing can come between them. ASKING's
        // own reply (+OK) is read and dropped. (A command that has to wait for a connection goes
        // without it, is redirected again and retried by the caller.)
        static constexpr std::array<std::string_view, 1> asking_args{"ASKING"};
        auto asking_cmd = std::make_shared<pending_command>(ex_);
        asking_cmd->abandoned = true;
        append_command(out_, asking_args);
        pending_.push_back(std::move(asking_cmd));
        bump(stats.commands_sent);
    }
    if (send_now) {
        append_command(out_, args);
        pending_.push_back(cmd);
        if (writer_idle_) {
            writer_idle_ = false; // one wake-up per batch
            wake_writer_.cancel();
        }
        bump(stats.commands_sent);
    } else {
        append_command(cmd->payload, args);
        waiting_.push_back(cmd);
    }
    return cmd;
}

asio::awaitable<command_result> redis_connection::finish(std::shared_ptr<pending_command> cmd,
                                                         std::shared_ptr<redis_connection>)
{
    if (!cmd)
        co_return command_result{make_error_code(error::store_unavailable), nullptr};
    auto& stats = shared_->stats;
    // The reply (or the deadline) may have come already, while the caller awaited another
    // command: a cancel reaches only a wait under way.
    if (!cmd->done && !cmd->expired)
        co_await cmd->event.async_wait(as_tuple(asio::deferred));
    if (cmd->done) {
        if (cmd->reply)
            stats.latency.observe(clock::now() - cmd->sent);
        co_return command_result{cmd->ec, std::move(cmd->reply), std::move(cmd->node)};
    }
    // Deadline passed (or the caller was cancelled): the command may still run on the server,
    // so its outcome is unknown. Its reply, if any, is read and dropped by the reader.
    cmd->abandoned = true;
    bump(stats.errors_timeout);
    check_stall();
    co_return command_result{make_error_code(error::store_timeout), nullptr};
}

void redis_connection::on_lost(std::uint64_t gen, std::string_view, error_code)
{
    if (gen != generation_ || !connected_)
        return;
    connected_ = false;
    if (subscriber_ && subscriber_->on_lost)
        subscriber_->on_lost();
    writer_idle_ = false;
    transport_.close();
    wake_writer_.cancel();
    lost_.cancel();
    policy_timer_.cancel();
    role_timer_.cancel();
    // Lost during the handshake: run() is waiting on a handshake command that will never be
    // answered, and fails the pending ones only once it returns; without this, the attempt (and
    // every command waiting for it) would sit out command_timeout.
    if (connecting_) {
        fail_pending(make_error_code(error::store_unavailable));
        return;
    }
    // A connection that was up and is lost (a killed client, an idle timeout, a restarted server,
    // a primary the sentinels no longer name) is connected again at once, and from here on a
    // command waits for that attempt within its deadline instead of failing through the first
    // backoff; at most once a second, so a server that drops every connection after the handshake
    // still meets the backoff.
    const auto now = clock::now();
    if (up_ && !stopped_ && (!last_prompt_ || now - *last_prompt_ >= std::chrono::seconds(1))) {
        last_prompt_ = now;
        prompt_reconnect_ = true;
        connecting_ = true;
    }
}

void redis_connection::send_waiting()
{
    for (auto& cmd : waiting_) {
        if (cmd->abandoned)
            continue; // timed out before it was sent: it never ran
        out_.append(cmd->payload);
        cmd->payload.clear();
        pending_.push_back(std::move(cmd));
        bump(shared_->stats.commands_sent);
    }
    waiting_.clear();
    if (writer_idle_ && !out_.empty()) {
        writer_idle_ = false;
        wake_writer_.cancel();
    }
}

void redis_connection::fail_pending(error_code ec)
{
    for (auto& cmd : waiting_)
        pending_.push_back(std::move(cmd));
    waiting_.clear();
    fail_sent(ec);
}

void redis_connection::fail_sent(error_code ec)
{
    auto failed = std::move(pending_);
    pending_.clear();
    out_.clear();
    // writing_ may still be referenced by an aborted write; the next writer clears it.
    for (auto& cmd : failed) {
        if (cmd->abandoned)
            continue;
        if (ec == error::store_unavailable)
            bump(shared_->stats.errors_unavailable);
        cmd->ec = ec;
        cmd->done = true;
        cmd->event.cancel();
    }
}

} // namespace idemgate::store::detail
