// SPDX-License-Identifier: Apache-2.0
#include "settle_notifier.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;

std::unique_ptr<settle_notifier::registration> settle_notifier::watch(const std::string& channel,
                                                                      asio::any_io_executor ex)
{
    auto w = std::make_shared<waiter>(ex);
    bool first = false;
    {
        std::lock_guard lock(mutex_);
        auto& ch = channels_[channel];
        first = ch.waiters.empty();
        if (first)
            ch.active = !needs_subscription_;
        ch.waiters.push_back(w);
        w->active = ch.active; // we are on the waiter's thread
        waiting_.fetch_add(1, std::memory_order_relaxed);
    }
    if (first && on_interest)
        on_interest(channel, true);
    return std::make_unique<registration>(*this, channel, std::move(w));
}

void settle_notifier::remove(const std::string& channel, const std::shared_ptr<waiter>& w)
{
    bool last = false;
    {
        std::lock_guard lock(mutex_);
        auto it = channels_.find(channel);
        if (it == channels_.end())
            return;
        auto& ws = it->second.waiters;
        auto found = std::find(ws.begin(), ws.end(), w);
        if (found == ws.end())
            return;
        ws.erase(found);
        waiting_.fetch_sub(1, std::memory_order_relaxed);
        if (ws.empty()) {
            channels_.erase(it);
            last = true;
        }
    }
    if (last && on_interest)
        on_interest(channel, false);
}

void settle_notifier::wake(std::vector<std::shared_ptr<waiter>> ws, bool active)
{
    for (auto& w : ws) {
        auto ex = w->ex;
        asio::post(ex, [w = std::move(w), active] {
            if (active)
                w->active = true;
            w->woken = true;
            w->timer.cancel();
        });
    }
}

void settle_notifier::notify(std::string_view channel)
{
    if (waiting() == 0)
        return;
    std::vector<std::shared_ptr<waiter>> ws;
    {
        std::lock_guard lock(mutex_);
        auto it = channels_.find(std::string(channel));
        if (it == channels_.end())
            return;
        ws = it->second.waiters;
    }
    wake(std::move(ws), false);
}

void settle_notifier::activate(std::string_view channel)
{
    std::vector<std::shared_ptr<waiter>> ws;
    {
        std::lock_guard lock(mutex_);
        auto it = channels_.find(std::string(channel));
        if (it == channels_.end() || it->second.active)
            return;
        it->second.active = true;
        ws = it->second.waiters;
    }
    wake(std::move(ws), true);
}

void settle_notifier::deactivate_all()
{
    std::lock_guard lock(mutex_);
    for (auto& [name, ch] : channels_) {
        ch.active = false;
        for (auto& w : ch.waiters)
            asio::post(w->ex, [w] { w->active = false; });
    }
}

void settle_notifier::deactivate(std::string_view channel)
{
    std::lock_guard lock(mutex_);
    auto it = channels_.find(std::string(channel));
    if (it == channels_.end() || !it->second.active)
        return;
    it->second.active = false;
    for (auto& w : it->second.waiters)
        asio::post(w->ex, [w] { w->active = false; });
}

bool settle_notifier::wanted(const std::string& channel) const
{
    std::lock_guard lock(mutex_);
    return channels_.contains(channel);
}

std::vector<std::string> settle_notifier::channels() const
{
    std::lock_guard lock(mutex_);
    std::vector<std::string> out;
    out.reserve(channels_.size());
    for (const auto& [name, ch] : channels_)
        out.push_back(name);
    return out;
}

asio::awaitable<wait_result> wait_until_settled(settle_notifier& notifier, session& s, scope sc,
                                                const std::string& channel, duration timeout)
{
    auto ex = co_await asio::this_coro::executor;
    auto reg = notifier.watch(channel, ex);
    auto& w = reg->get();
    auto deadline = std::chrono::steady_clock::now() + timeout;
    wait_result out;
    bool look = true; // read the key as soon as the channel is active
    for (;;) {
        if (w.woken) {
            w.woken = false;
            look = true;
        }
        if (w.active && look) {
            look = false;
            auto found = co_await s.lookup(sc);
            if (found.ec) {
                out.ec = found.ec;
                co_return out;
            }
            out.existing = std::move(found.existing);
            if (!out.existing || out.existing->state != record_state::in_flight)
                co_return out;
            continue; // a wake-up may have arrived while the key was being read
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            out.timed_out = true;
            co_return out;
        }
        w.timer.expires_at(deadline);
        boost::system::error_code ec;
        co_await w.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

} // namespace idemgate::store::detail
