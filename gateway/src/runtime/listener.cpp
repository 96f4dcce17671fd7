// SPDX-License-Identifier: Apache-2.0
#include "runtime/listener.hpp"

#include "idempotency/shadow_report.hpp"
#include "reconcile/reconcile_loop.hpp"
#include "runtime/client_connection.hpp"
#include "runtime/service_notify.hpp"
#include "tier/local_tier.hpp"
#include "transport/proxy_read.hpp"
#include "transport/tls.hpp"
#include "upstream/upstream_tls.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <idemgate/common/cpu_quota.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/ready_read.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <sstream>
#include <sys/socket.h>
#include <system_error>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

listener::listener(gateway_context& ctx, asio::io_context& control)
    : ctx_(ctx), control_(control), reloader_(ctx, control)
{
}

listener::~listener()
{
    stop_workers();
}

void listener::bind(const config::config& cfg)
{
    // Fleets resolved and TLS contexts built once, shared by every thread.
    reloader_.publish_first(cfg);

    // threads: 0 = one per CPU this process may use (affinity and cgroup CPU quota included).
    unsigned n = cfg.threads ? cfg.threads : available_cpus();
    tcp::endpoint ep = resolve_one(control_, cfg.listen, "listen");
    const auto& tier_cfg = cfg.store.local_tier;
    if (tier_cfg.max_bytes > 0) {
        // A record an operator removed (here or in another gateway) leaves every thread's tier;
        // "" means removals may have been missed: everything goes. Set before any session opens.
        ctx_.backend->on_removed([this](std::string_view id) {
            for (auto& w : workers_)
                asio::post(w->ioc, [t = w->tier.get(), id = std::string(id)] {
                    if (id.empty())
                        t->clear();
                    else
                        t->erase(id);
                });
        });
    }
    for (unsigned i = 0; i < n; ++i) {
        auto w = std::make_unique<worker>();
        if (tier_cfg.max_bytes > 0)
            w->tier.reset(new local_tier(tier_cfg.max_bytes / n, tier_cfg.max_age, ctx_.stats));
        open_listener(w->acceptor, ep, true, "listen");
        if (i == 0)
            ep = w->acceptor.local_endpoint();
        w->store = ctx_.backend->open_session(w->ioc.get_executor());
        workers_.push_back(std::move(w));
    }
    endpoint_ = ep;
}

bool listener::reload(std::string_view trigger, std::vector<std::string>& problems)
{
    return reloader_.reload(trigger, problems);
}

asio::awaitable<void> listener::accept_loop(worker& w)
{
    for (;;) {
        auto [ec, socket] = co_await w.acceptor.async_accept(use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || !w.acceptor.is_open()) {
                w.accepting.store(false);
                co_return;
            }
            // EMFILE and friends: log, back off briefly instead of spinning.
            log::warn("accept failed", {{"error", ec.message()}});
            asio::steady_timer t(w.ioc, std::chrono::milliseconds(50));
            co_await t.async_wait(use_tuple);
            continue;
        }
        // The live generation's limit: a reload changes it for the next connection.
        if (ctx_.stats.connections_active.load() >=
            static_cast<std::int64_t>(w.current(ctx_)->cfg().limits.max_connections)) {
            ctx_.stats.connections_refused.fetch_add(1);
            error_code ignored;
            socket.close(ignored);
            continue;
        }
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        enable_read_hints(socket); // reads know when a request emptied the socket
        client_info client;
        auto remote = socket.remote_endpoint(ignored);
        if (!ignored)
            client.ip = remote.address().to_string();
        client.peer = client.ip;
        client.trusted = is_trusted(ctx_.boot.listen_proxy.trusted_proxies, client.ip);
        if (ctx_.boot.listen_tls)
            asio::co_spawn(w.ioc, serve_tls_client(ctx_, w, std::move(socket), std::move(client)),
                           asio::detached);
        else
            asio::co_spawn(w.ioc, serve_plain_client(ctx_, w, std::move(socket), std::move(client)),
                           asio::detached);
    }
}

void listener::wait_for_signal()
{
    signals_->async_wait([this](const error_code& ec, int sig) {
        if (ec)
            return;
        if (sig == SIGHUP) {
            // Reload; never the default action (exit), which would drop reservations in flight.
            if (!drain_started_) {
                std::vector<std::string> problems;
                reload("SIGHUP", problems);
            }
            wait_for_signal();
            return;
        }
        if (sig == SIGUSR1 || sig == SIGUSR2) {
            // logrotate's habit is SIGUSR1 ("reopen your logs"): the access log's file
            // (access_log.path) is opened again; stdout is the service manager's, nothing to
            // reopen. Never the default action (exit).
            if (sig != SIGUSR1 || !ctx_.access_log || !ctx_.access_log->reopen())
                log::info("signal ignored: nothing to reopen",
                          {{"signal", sig == SIGUSR1 ? "SIGUSR1" : "SIGUSR2"}});
            wait_for_signal();
            return;
        }
        begin_drain(sig == SIGINT ? "SIGINT" : "SIGTERM");
        wait_for_signal(); // a second signal during the drain is ignored, not fatal
    });
}

std::chrono::milliseconds listener::drain_timeout() const
{
    return ctx_.live()->cfg.timeouts.drain;
}

void listener::begin_drain(const char* why)
{
    if (drain_started_)
        return;
    drain_started_ = true;
    ctx_.draining.store(true);
    notify_service("STOPPING=1\nSTATUS=draining");
    log::lifecycle("draining", {{"reason", why},
                                {"in_flight", ctx_.stats.requests_in_flight.load()},
                                {"drain_timeout_ms", static_cast<std::int64_t>(drain_timeout().count())}});
    for (auto& w : workers_) {
        asio::post(w->ioc, [wp = w.get()] {
            error_code ignored;
            wp->acceptor.close(ignored);
        });
    }
    asio::co_spawn(control_, wait_for_drain(), asio::detached);
}

asio::awaitable<void> listener::wait_for_drain()
{
    auto deadline = clock_type::now() + drain_timeout();
    asio::steady_timer timer(control_);
    while (ctx_.stats.requests_in_flight.load() > 0 && clock_type::now() < deadline) {
        timer.expires_after(std::chrono::milliseconds(10));
        co_await timer.async_wait(use_tuple);
    }
    auto left = ctx_.stats.requests_in_flight.load();
    if (left > 0)
        log::warn("drain timeout: abandoning in-flight requests (their locks expire by lock_ttl)",
                  {{"in_flight", left}});
    if (on_drained_)
        on_drained_();
    // Every accept loop must have returned before its io_context stops. With io_uring, the accept
    // that close() cancelled completes only when the kernel's cancellation comes back; an
    // io_context stopped before that destroys the operation after the socket service it refers
    // to (Asio 1.81: a heap-use-after-free at exit, under ASan on every SIGTERM). With epoll the
    // close completes it at once. Bounded: a stuck loop cannot hold the exit.
    auto accept_deadline = clock_type::now() + std::chrono::seconds(2);
    auto accepting = [this] {
        if (admin_accepting_ && admin_accepting_())
            return true;
        return std::any_of(workers_.begin(), workers_.end(),
                           [](const auto& w) { return w->accepting.load(); });
    };
    while (accepting() && clock_type::now() < accept_deadline) {
        timer.expires_after(std::chrono::milliseconds(1));
        co_await timer.async_wait(use_tuple);
    }
    for (auto& w : workers_)
        w->ioc.stop();
    error_code ignored;
    signals_->cancel(ignored);
    control_.stop();
}

void listener::run(const std::function<void()>& on_started, std::function<void()> on_drained,
                   std::function<bool()> admin_accepting)
{
    on_drained_ = std::move(on_drained);
    admin_accepting_ = std::move(admin_accepting);
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    for (auto& w : workers_) {
        guards.push_back(asio::make_work_guard(w->ioc));
        w->accepting.store(true);
        asio::co_spawn(w->ioc, accept_loop(*w), asio::detached);
    }
    // Held keys' probes (reconcile) go out from one thread; it idles while no route reconciles.
    if (!workers_.empty())
        asio::co_spawn(workers_.front()->ioc, reconcile_loop(ctx_, *workers_.front()), asio::detached);
    // Shadow routes' counts go to the store from one thread too (nothing to send: nothing sent).
    if (!workers_.empty())
        asio::co_spawn(workers_.front()->ioc, shadow_flush_loop(ctx_, *workers_.front()), asio::detached);
    for (const auto& f : ctx_.live()->fleets)
        f->start(control_); // re-resolution (resolve_every), once per process
    signals_ = std::make_unique<asio::signal_set>(control_, SIGINT, SIGTERM, SIGHUP);
    signals_->add(SIGUSR1);
    signals_->add(SIGUSR2);
    wait_for_signal();
    auto control_guard = asio::make_work_guard(control_);
    for (auto& w : workers_)
        w->thread = std::thread([wp = w.get()] { wp->ioc.run(); });
    if (on_started)
        on_started();
    asio::co_spawn(control_, announce_ready(ctx_), asio::detached);
    if (auto interval = watchdog_interval())
        asio::co_spawn(
            control_,
            watchdog_loop(*interval, [this, interval = *interval] { return workers_alive(interval); }),
            asio::detached);
    control_.run();
    stop_workers();
}

bool listener::workers_alive(std::chrono::microseconds interval)
{
    // Alive: each thread ran the heartbeat posted to it a tick ago (ticks are interval / 2
    // apart, so a thread has a whole interval to run it).
    auto now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
    auto limit = std::chrono::duration_cast<std::chrono::nanoseconds>(interval).count();
    bool alive = true;
    for (auto& w : workers_) {
        auto beat = w->heartbeat_ns.load(std::memory_order_relaxed);
        if (beat != 0 && now - beat > limit)
            alive = false;
        if (beat == 0)
            w->heartbeat_ns.store(now, std::memory_order_relaxed); // the first tick
        asio::post(w->ioc, [wp = w.get()] {
            wp->heartbeat_ns.store(
                std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
                    .count(),
                std::memory_order_relaxed);
        });
    }
    return alive;
}

void listener::stop_workers()
{
    for (auto& w : workers_) {
        w->ioc.stop();
        if (w->thread.joinable())
            w->thread.join();
    }
}

} // namespace idemgate::gateway::detail
