// SPDX-License-Identifier: Apache-2.0
#include "redis/client/redis_sentinel.hpp"

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

sentinel_monitor::sentinel_monitor(std::shared_ptr<redis_shared> shared) : shared_(std::move(shared)) {}

config::endpoint sentinel_monitor::current() const
{
    std::lock_guard lock(mutex_);
    return current_;
}

void sentinel_monitor::start(asio::any_io_executor ex)
{
    ex_ = ex;
    timer_.emplace(ex);
    std::weak_ptr<sentinel_monitor> weak = weak_from_this();
    shared_->on_primary_suspect = [weak, ex] {
        asio::post(ex, [weak] {
            if (auto self = weak.lock())
                self->request();
        });
    };
    auto rotate = [weak](std::size_t sentinel_monitor::*next) {
        return [weak, next] {
            auto self = weak.lock();
            if (!self || self->shared_->cfg.nodes.empty())
                return config::endpoint{"", 0};
            const auto& nodes = self->shared_->cfg.nodes;
            return nodes[(self.get()->*next)++ % nodes.size()];
        };
    };
    // Both connections skip the data connections' checks (subscriber hooks) and talk to sentinels.
    query_ = std::make_shared<redis_connection>(ex, shared_, subscriber_hooks{});
    query_->talk_to_sentinel();
    query_->set_address_source(rotate(&sentinel_monitor::next_query_sentinel_));
    subscriber_hooks hooks;
    hooks.on_message = [weak](std::string_view channel, std::string_view payload) {
        if (channel != "+switch-master")
            return;
        if (auto self = weak.lock()) {
            log::info("sentinel announced a new primary", {{"message", printable_text(payload)}});
            // "<name> <old-ip> <old-port> <new-ip> <new-port>": followed at once, then confirmed
            // by asking the sentinels.
            std::array<std::string_view, 5> part;
            std::size_t n = 0;
            for (std::size_t pos = 0; pos <= payload.size() && n < part.size();) {
                auto end = std::min(payload.find(' ', pos), payload.size());
                part[n++] = payload.substr(pos, end - pos);
                pos = end + 1;
            }
            unsigned port = 0;
            if (n == 5 && part[0] == self->shared_->cfg.sentinel_master_name &&
                std::from_chars(part[4].data(), part[4].data() + part[4].size(), port).ec == std::errc{} &&
                port > 0 && port <= 65535)
                self->name_primary(config::endpoint{std::string(part[3]), static_cast<std::uint16_t>(port)},
                                   "+switch-master");
            self->request();
        }
    };
    hooks.on_up = [weak] {
        auto self = weak.lock();
        if (!self)
            return;
        asio::co_spawn(
            self->ex_,
            [self]() -> asio::awaitable<void> {
                std::array<std::string_view, 2> args{"SUBSCRIBE", "+switch-master"};
                co_await self->subscribed_->execute(args);
            },
            asio::detached);
    };
    subscribed_ = std::make_shared<redis_connection>(ex, shared_, std::move(hooks));
    subscribed_->talk_to_sentinel();
    subscribed_->set_address_source(rotate(&sentinel_monitor::next_sub_sentinel_));
    query_->start();
    subscribed_->start();
    asio::co_spawn(ex, run(shared_from_this()), asio::detached);
}

void sentinel_monitor::shutdown()
{
    if (!timer_)
        return;
    asio::post(ex_, [self = shared_from_this()] {
        self->stopped_ = true;
        self->timer_->cancel();
        self->query_->shutdown();
        self->subscribed_->shutdown();
    });
}

void sentinel_monitor::request()
{
    requested_ = true;
    if (timer_)
        timer_->cancel();
}

asio::awaitable<void> sentinel_monitor::run(std::shared_ptr<sentinel_monitor>)
{
    using namespace std::chrono_literals;
    while (!stopped_) {
        requested_ = false;
        co_await ask();
        if (stopped_)
            break;
        bool known = current().port != 0;
        if (!requested_) {
            timer_->expires_after(known ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(100));
            co_await timer_->async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }
}

asio::awaitable<void> sentinel_monitor::ask()
{
    const auto& name = shared_->cfg.sentinel_master_name;
    std::array<std::string_view, 3> args{"SENTINEL", "get-master-addr-by-name", name};
    auto r = co_await query_->execute(args);
    if (stopped_)
        co_return;
    const redisReply* reply = r.reply.get();
    if (r.ec || !reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 2 ||
        reply->element[0]->type != REDIS_REPLY_STRING || reply->element[1]->type != REDIS_REPLY_STRING) {
        if (!reported_unknown_)
            log::warn("sentinels do not name a primary yet; retrying",
                      {{"master_name", name}, {"reply", r.ec ? reply_text(r) : std::string("nil")}});
        reported_unknown_ = true;
        co_return;
    }
    reported_unknown_ = false;
    config::endpoint ep;
    ep.host.assign(reply->element[0]->str, reply->element[0]->len);
    std::string_view port_text(reply->element[1]->str, reply->element[1]->len);
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc{} || port == 0 || port > 65535)
        co_return;
    ep.port = static_cast<std::uint16_t>(port);
    name_primary(ep, "get-master-addr-by-name");
}

void sentinel_monitor::name_primary(const config::endpoint& ep, std::string_view source)
{
    config::endpoint previous;
    {
        std::lock_guard lock(mutex_);
        if (ep.host == current_.host && ep.port == current_.port)
            return;
        previous = current_;
        current_ = ep;
    }
    log::info("sentinels name the primary", {{"master_name", shared_->cfg.sentinel_master_name},
                                             {"address", ep.to_string()},
                                             {"previous", previous.port ? previous.to_string() : "none"},
                                             {"source", source}});
    if (previous.port == 0)
        return;
    shared_->stats.primary_switches.fetch_add(1, std::memory_order_relaxed);
    shared_->primary_switched();
}

// The data connections' side: each follows the primary the monitor names.

void redis_connection::follow_primary()
{
    asio::post(ex_, [self = shared_from_this()] { self->leave_if_moved(); });
}

bool redis_connection::address_current() const
{
    if (!follows_primary_)
        return true;
    auto now = address_source_();
    return now.port == 0 || (now.host == address_.host && now.port == address_.port);
}

bool redis_connection::leave_if_moved()
{
    seen_primary_epoch_ = shared_->primary_epoch.load(std::memory_order_acquire);
    // A connect attempt under way checks the address again before the connection is used.
    if (stopped_ || !connected_ || address_current())
        return false;
    log::warn("closing the connection to the old primary: the sentinels name another",
              {{"address", address_.to_string()}, {"primary", address_source_().to_string()}});
    fail_pending(make_error_code(error::store_unavailable));
    on_lost(generation_, "primary switched", {});
    return true;
}

void redis_shared::add_follower(const std::shared_ptr<redis_connection>& c)
{
    std::lock_guard lock(followers_mutex_);
    std::erase_if(followers_, [](const auto& w) { return w.expired(); });
    followers_.push_back(c);
}

namespace {

std::int64_t steady_ms() noexcept
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

void redis_shared::primary_stalled() noexcept
{
    if (cfg.mode != config::redis_mode::sentinel || cfg.consistency != config::redis_consistency::strict)
        return;
    long long known = stats.connected_replicas.load(std::memory_order_relaxed);
    if (suspect_until_ms.load(std::memory_order_relaxed) > steady_ms())
        known = std::max(known, suspect_replicas.load(std::memory_order_relaxed));
    suspect_replicas.store(known, std::memory_order_relaxed);
    suspect_until_ms.store(steady_ms() + std::chrono::milliseconds(suspect_for).count(),
                           std::memory_order_relaxed);
}

long long redis_shared::acks_wanted() const noexcept
{
    auto wanted = static_cast<long long>(cfg.min_replicas_ack);
    if (suspect_until_ms.load(std::memory_order_relaxed) > steady_ms())
        wanted = std::max(wanted, suspect_replicas.load(std::memory_order_relaxed));
    return wanted;
}

void redis_shared::primary_switched()
{
    // Another primary: its replicas are what counts now.
    suspect_until_ms.store(0, std::memory_order_relaxed);
    primary_epoch.fetch_add(1, std::memory_order_acq_rel);
    std::lock_guard lock(followers_mutex_);
    for (const auto& w : followers_)
        if (auto c = w.lock())
            c->follow_primary();
}

} // namespace idemgate::store::detail
