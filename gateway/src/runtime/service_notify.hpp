// SPDX-License-Identifier: Apache-2.0
#pragma once
// The service manager's readiness protocol (sd_notify(3)): READY=1 once the listeners are bound
// and the store first answers, RELOADING=1 / READY=1 around a reload, STOPPING=1 when the drain
// begins, and the watchdog's WATCHDOG=1 while every I/O thread still runs what is posted to it.
// Without NOTIFY_SOCKET (not started by systemd with Type=notify) every call does nothing. Built
// without libsystemd, the same.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string_view>

namespace idemgate::gateway::detail {

struct gateway_context;

// Sends one state line ("READY=1", "STATUS=..."); errors are ignored (nothing to do about them).
void notify_service(std::string_view state);

// "RELOADING=1" with the monotonic time systemd 253+ wants beside it.
void notify_reloading();

// READY=1 once the store first answers (STATUS= says what it waits for until then), so a unit
// ordered after idemgate starts when guarded requests can be served. Run on the control context.
boost::asio::awaitable<void> announce_ready(const gateway_context& ctx);

// The watchdog's interval when the service manager asked for one (WATCHDOG_USEC for this process).
std::optional<std::chrono::microseconds> watchdog_interval();

// Sends WATCHDOG=1 every interval / 2 while `alive()` says the I/O threads answer; stops when
// the context stops. Run on the control context.
boost::asio::awaitable<void> watchdog_loop(std::chrono::microseconds interval, std::function<bool()> alive);

} // namespace idemgate::gateway::detail
