// SPDX-License-Identifier: Apache-2.0
#include "runtime/service_notify.hpp"

#include "state/process.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <ctime>
#include <string>

#ifdef IDEMGATE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace idemgate::gateway::detail {

namespace asio = boost::asio;

void notify_service(std::string_view state)
{
#ifdef IDEMGATE_SYSTEMD
    std::string line(state);
    (void)sd_notify(0, line.c_str());
#else
    (void)state;
#endif
}

void notify_reloading()
{
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    auto usec = static_cast<long long>(now.tv_sec) * 1000000 + now.tv_nsec / 1000;
    notify_service("RELOADING=1\nMONOTONIC_USEC=" + std::to_string(usec));
}

std::optional<std::chrono::microseconds> watchdog_interval()
{
#ifdef IDEMGATE_SYSTEMD
    std::uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
        return std::chrono::microseconds(usec);
#endif
    return std::nullopt;
}

asio::awaitable<void> announce_ready(const gateway_context& ctx)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    bool said_waiting = false;
    while (!ctx.backend->ready()) {
        if (ctx.draining.load())
            co_return;
        if (!said_waiting) {
            notify_service("STATUS=listening; waiting for the store");
            said_waiting = true;
        }
        timer.expires_after(std::chrono::milliseconds(20));
        auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (ec)
            co_return;
    }
    notify_service("READY=1\nSTATUS=serving");
}

asio::awaitable<void> watchdog_loop(std::chrono::microseconds interval, std::function<bool()> alive)
{
    asio::steady_timer timer(co_await asio::this_coro::executor);
    for (;;) {
        // Silence when a thread is stuck: the service manager then restarts the process.
        if (alive())
            notify_service("WATCHDOG=1");
        timer.expires_after(interval / 2);
        auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (ec)
            co_return;
    }
}

} // namespace idemgate::gateway::detail
