// SPDX-License-Identifier: Apache-2.0
#include "redis/health_monitor.hpp"

#include "redis/redis_scripts.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <hiredis/hiredis.h>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/record_codec.hpp>
#include <random>

namespace idemgate::store::detail {

namespace asio = boost::asio;

namespace {

// A probe that stops halfway leaves its key for this long at most.
constexpr std::string_view probe_ttl_ms = "5000";

std::string random_hex()
{
    std::random_device rd;
    std::array<unsigned char, 16> bytes{};
    for (auto& b : bytes)
        b = static_cast<unsigned char>(rd());
    std::string out;
    append_hex(out, bytes.data(), bytes.size());
    return out;
}

} // namespace

health_monitor::health_monitor(asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                               std::shared_ptr<command_router> router)
    : ex_(std::move(ex)), shared_(std::move(shared)), router_(std::move(router)), timer_(ex_),
      instance_id_(random_hex())
{
}

std::string health_monitor::probe_key(std::string_view key_prefix)
{
    return std::string(key_prefix) + ":probe";
}

std::string health_monitor::marker_key(std::string_view key_prefix)
{
    return std::string(key_prefix) + ":marker";
}

void health_monitor::start()
{
    shared_->health.enable();
    asio::co_spawn(ex_, run(shared_from_this()), asio::detached);
}

void health_monitor::shutdown()
{
    stopped_ = true;
    timer_.cancel();
}

asio::awaitable<void> health_monitor::run(std::shared_ptr<health_monitor>)
{
    while (!stopped_) {
        // After each (re)connect (a restarted or failed-over server, another ACL), and while the
        // store refuses: the check is also the probe write that ends the refusing state.
        const auto connects = shared_->stats.connects.load(std::memory_order_relaxed);
        if (connects != checked_connects_ || shared_->health.needs_probe()) {
            auto result = co_await check_commands();
            if (stopped_)
                co_return;
            if (result == check_result::passed)
                shared_->health.check_passed();
            else if (result == check_result::refused)
                shared_->health.check_refused(refused_command_, refused_reply_);
            if (result != check_result::unknown)
                checked_connects_ = connects;
        }
        co_await check_marker();
        if (stopped_)
            co_return;
        timer_.expires_after(shared_->options.health_interval);
        co_await timer_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

asio::awaitable<bool> health_monitor::step(std::string_view name, std::string_view key,
                                           std::span<const std::string_view> args, check_result& result)
{
    auto r = co_await router_->execute(key, args);
    if (r.ec == error::store_error_reply) {
        refused_command_ = name;
        refused_reply_ = reply_text(r);
        result = check_result::refused;
        co_return false;
    }
    if (r.ec) {
        result = check_result::unknown; // unreachable or slow: nothing learned
        co_return false;
    }
    co_return true;
}

asio::awaitable<health_monitor::check_result> health_monitor::check_commands()
{
    const auto key = probe_key(shared_->cfg.key_prefix);
    record probe;
    probe.owner_token = instance_id_;
    probe.created_unix_ms = log::now_unix_ms();
    const auto value = encode_record(probe);
    const auto owner = owner_prefix(instance_id_);
    const std::string_view publish = !shared_->options.publish_settled                  ? ""
                                     : shared_->cfg.mode == config::redis_mode::cluster ? "SPUBLISH"
                                                                                        : "PUBLISH";
    auto result = check_result::passed;
    // What a reservation sends (SET) and a lookup (GET).
    std::array<std::string_view, 5> set{"SET", key, value, "PX", probe_ttl_ms};
    bool ran = co_await step("SET", key, set, result);
    if (!ran)
        co_return result;
    std::array<std::string_view, 2> get{"GET", key};
    ran = co_await step("GET", key, get, result);
    if (!ran)
        co_return result;
    // release's script by its text (EVAL), which runs GET, DEL and, in wait mode, the publish
    // command, and deletes the probe.
    std::array<std::string_view, 6> release{"EVAL", release_lua().text, "1", key, owner, publish};
    ran = co_await step("EVAL", key, script_args(release), result);
    if (!ran)
        co_return result;
    // complete's script by its digest (EVALSHA), as every complete sends it; the probe is gone,
    // so it only answers 0. NOSCRIPT: its text is sent, as complete does.
    std::array<std::string_view, 7> complete{"EVALSHA", complete_lua().sha, "1",    key,
                                             value,     probe_ttl_ms,       publish};
    auto command = script_args(complete);
    auto r = co_await router_->execute(key, command);
    if (is_noscript(r)) {
        complete[0] = "EVAL";
        complete[1] = complete_lua().text;
        co_await step("EVALSHA (NOSCRIPT, then EVAL)", key, command, result);
        co_return result;
    }
    if (r.ec == error::store_error_reply) {
        refused_command_ = "EVALSHA";
        refused_reply_ = reply_text(r);
        co_return check_result::refused;
    }
    co_return r.ec ? check_result::unknown : result;
}

asio::awaitable<void> health_monitor::check_marker()
{
    const auto key = marker_key(shared_->cfg.key_prefix);
    if (marker_.empty()) {
        std::array<std::string_view, 4> set{"SET", key, instance_id_, "NX"};
        auto written = co_await router_->execute(key, set);
        if (written.ec || stopped_)
            co_return; // the command check names a refused SET; unreachable: the next round
    }
    std::array<std::string_view, 2> get{"GET", key};
    auto r = co_await router_->execute(key, get);
    if (r.ec || stopped_)
        co_return;
    if (r.reply->type == REDIS_REPLY_STRING) {
        std::string now(r.reply->str, r.reply->len);
        // Another gateway's id where ours was: it found the marker gone and wrote it again.
        if (!marker_.empty() && now != marker_)
            shared_->health.note_emptied();
        marker_ = std::move(now);
    } else if (r.reply->type == REDIS_REPLY_NIL && !marker_.empty()) {
        shared_->health.note_emptied();
        marker_.clear(); // written again at the next round
    }
}

} // namespace idemgate::store::detail
