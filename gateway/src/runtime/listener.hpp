#pragma once
// The listener: one worker (io_context + thread) per I/O thread with SO_REUSEPORT acceptors,
// the connection limit, signals (SIGTERM/SIGINT drain, SIGHUP), and the drain itself.
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

    // Resolves the upstreams, creates the workers and binds `listen` (port 0: the first
    // acceptor picks the port, the others join it).
    void bind();
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

    // Reads ctx.config_path again and, if it is valid, makes it the live configuration for new
    // requests (routes, policies, tenants, upstreams, limits, timeouts, access log); settings
    // that need a restart keep their running values, with a warning. On a problem, nothing
    // changes and every problem is logged and returned. Control thread only.
    bool reload(std::string_view trigger, std::vector<std::string>& problems);

private:
    boost::asio::awaitable<void> accept_loop(worker& w);
    boost::asio::awaitable<void> wait_for_drain();
    void wait_for_signal();
    void stop_workers();

    gateway_context& ctx_;
    boost::asio::io_context& control_;
    std::string boot_text_; // the file as started: restart-only settings are compared with it
    std::vector<std::unique_ptr<worker>> workers_;
    tcp::endpoint endpoint_;
    std::function<void()> on_drained_;
    std::function<bool()> admin_accepting_;
    std::unique_ptr<boost::asio::signal_set> signals_;
    bool drain_started_ = false;
};

} // namespace idemgate::gateway::detail
