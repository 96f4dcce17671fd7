// SPDX-License-Identifier: Apache-2.0
#pragma once
// The listener: one worker (io_context + thread) per I/O thread with SO_REUSEPORT acceptors,
// the connection limit, signals (SIGTERM/SIGINT drain, SIGHUP), and the drain itself.
#include "runtime/reload.hpp"
#include "state/worker.hpp"
#include "transport/listen_socket.hpp"

#include <boost/asio/signal_set.hpp>
#include <functional>

namespace idemgate::gateway::detail {

class listener {
public:
    listener(gateway_context& ctx, boost::asio::io_context& control);
    ~listener();
    listener(const listener&) = delete;
    listener& operator=(const listener&) = delete;

    // Publishes the first configuration generation from `boot` (upstreams resolved), creates
    // the workers and binds `listen` (port 0: the first acceptor picks the port, the others
    // join it).
    void bind(const config::config& boot);
    tcp::endpoint endpoint() const { return endpoint_; }
    std::size_t threads() const { return workers_.size(); }

    // Starts the I/O threads and the signal handling, then runs the control context until the
    // drain ends. `on_started` runs once the threads serve; `on_drained` runs on the control
    // thread just before it stops.
    // `admin_accepting`: whether the admin listener's accept loop still runs after on_drained
    // closed it (the drain waits for it before the contexts stop).
    void run(const std::function<void()>& on_started, std::function<void()> on_drained,
             std::function<bool()> admin_accepting = {});

    // Begins the drain: stop accepting, let in-flight requests finish (timeouts.drain).
    void begin_drain(const char* why);

    // A reload (reloader::reload). Control thread only.
    bool reload(std::string_view trigger, std::vector<std::string>& problems);

private:
    boost::asio::awaitable<void> accept_loop(worker& w);
    boost::asio::awaitable<void> wait_for_drain();
    void wait_for_signal();
    void stop_workers();
    // For the service manager's watchdog: every I/O thread ran what was posted to it a tick ago.
    bool workers_alive(std::chrono::microseconds interval);
    // The live generation's timeouts.drain: the value of the last reload before the drain.
    std::chrono::milliseconds drain_timeout() const;

    gateway_context& ctx_;
    boost::asio::io_context& control_;
    reloader reloader_;
    std::vector<std::unique_ptr<worker>> workers_;
    tcp::endpoint endpoint_;
    std::function<void()> on_drained_;
    std::function<bool()> admin_accepting_;
    std::unique_ptr<boost::asio::signal_set> signals_;
    bool drain_started_ = false;
};

} // namespace idemgate::gateway::detail
