#include "listener.hpp"

#include "http_connection.hpp"
#include "tls.hpp"

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
#include <sstream>
#include <sys/socket.h>
#include <system_error>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

std::string worker::new_owner_token()
{
    static constexpr char hex[] = "0123456789abcdef";
    std::string token(32, '0');
    for (int half = 0; half < 2; ++half) {
        auto v = rng();
        for (int i = 0; i < 16; ++i)
            token[half * 16 + i] = hex[(v >> (i * 4)) & 0xf];
    }
    return token;
}

tcp::endpoint resolve_one(asio::io_context& ioc, const config::endpoint& ep, const char* what)
{
    tcp::resolver resolver(ioc);
    error_code ec;
    auto results = resolver.resolve(ep.host, std::to_string(ep.port), ec);
    if (ec || results.empty())
        throw std::system_error(ec, std::string(what) + ": cannot resolve " + ep.to_string());
    return results.begin()->endpoint();
}

void open_listener(tcp::acceptor& acc, const tcp::endpoint& ep, bool reuse_port, const char* what)
{
    error_code ec;
    acc.open(ep.protocol(), ec);
    if (!ec)
        acc.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && reuse_port) {
        int one = 1;
        if (::setsockopt(acc.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
            ec = error_code(errno, boost::system::system_category());
    }
    if (!ec)
        acc.bind(ep, ec);
    if (!ec)
        acc.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        std::ostringstream os;
        os << what << ": cannot listen on " << ep << ": " << ec.message();
        throw std::system_error(ec, os.str());
    }
}

listener::listener(gateway_context& ctx, asio::io_context& control) : ctx_(ctx), control_(control) {}

listener::~listener()
{
    stop_workers();
}

void listener::bind()
{
    const auto& cfg = ctx_.cfg;
    for (const auto& up : cfg.upstreams) {
        tcp::resolver resolver(control_);
        error_code ec;
        auto results = resolver.resolve(up.address.host, std::to_string(up.address.port), ec);
        if (ec || results.empty())
            throw std::system_error(ec, "upstreams." + up.name + ".address: cannot resolve " +
                                            up.address.to_string());
        std::vector<tcp::endpoint> eps;
        for (const auto& r : results)
            eps.push_back(r.endpoint());
        upstream_endpoints_.push_back(std::move(eps));
    }

    // TLS contexts are built once and shared by every thread (a bad file throws config_error).
    if (cfg.tls)
        ctx_.listen_tls = make_server_tls_context(*cfg.tls);
    std::vector<std::shared_ptr<upstream_tls>> upstream_contexts;
    for (const auto& up : cfg.upstreams)
        upstream_contexts.push_back(make_upstream_tls(up));

    // threads: 0 = one per CPU this process may use (affinity and cgroup CPU quota included).
    unsigned n = cfg.threads ? cfg.threads : available_cpus();
    tcp::endpoint ep = resolve_one(control_, cfg.listen, "listen");
    for (unsigned i = 0; i < n; ++i) {
        auto w = std::make_unique<worker>();
        open_listener(w->acceptor, ep, true, "listen");
        if (i == 0)
            ep = w->acceptor.local_endpoint();
        w->store = ctx_.backend->open_session(w->ioc.get_executor());
        for (std::size_t u = 0; u < cfg.upstreams.size(); ++u)
            w->pools.push_back(std::make_unique<upstream_pool>(
                w->ioc.get_executor(), upstream_endpoints_[u], cfg.upstreams[u].max_idle_connections, cfg,
                ctx_.stats, cfg.upstreams[u].name, upstream_contexts[u]));
        workers_.push_back(std::move(w));
    }
    endpoint_ = ep;
}

asio::awaitable<void> listener::accept_loop(worker& w)
{
    for (;;) {
        auto [ec, socket] = co_await w.acceptor.async_accept(use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || !w.acceptor.is_open())
                co_return;
            // EMFILE and friends: log, back off briefly instead of spinning.
            log::warn("accept failed", {{"error", ec.message()}});
            asio::steady_timer t(w.ioc, std::chrono::milliseconds(50));
            co_await t.async_wait(use_tuple);
            continue;
        }
        if (ctx_.stats.connections_active.load() >=
            static_cast<std::int64_t>(ctx_.cfg.limits.max_connections)) {
            ctx_.stats.connections_refused.fetch_add(1);
            error_code ignored;
            socket.close(ignored);
            continue;
        }
        error_code ignored;
        socket.set_option(tcp::no_delay(true), ignored);
        client_info client;
        auto remote = socket.remote_endpoint(ignored);
        if (!ignored)
            client.ip = remote.address().to_string();
        if (ctx_.listen_tls)
            asio::co_spawn(w.ioc, serve_tls_connection(ctx_, w, std::move(socket), std::move(client)),
                           asio::detached);
        else
            asio::co_spawn(w.ioc, serve_plain_connection(ctx_, w, std::move(socket), std::move(client)),
                           asio::detached);
    }
}

void listener::wait_for_signal()
{
    signals_->async_wait([this](const error_code& ec, int sig) {
        if (ec)
            return;
        if (sig == SIGHUP) {
            // Reload is not implemented yet; SIGHUP must never kill a process that holds
            // reservations in flight (its default action would).
            log::warn("SIGHUP received: configuration reload is not supported yet; configuration unchanged");
            wait_for_signal();
            return;
        }
        begin_drain(sig == SIGINT ? "SIGINT" : "SIGTERM");
        wait_for_signal(); // a second signal during the drain is ignored, not fatal
    });
}

void listener::begin_drain(const char* why)
{
    if (drain_started_)
        return;
    drain_started_ = true;
    ctx_.draining.store(true);
    log::info("draining", {{"reason", why},
                           {"in_flight", ctx_.stats.requests_in_flight.load()},
                           {"drain_timeout_ms", static_cast<std::int64_t>(ctx_.cfg.timeouts.drain.count())}});
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
    auto deadline = clock_type::now() + ctx_.cfg.timeouts.drain;
    asio::steady_timer timer(control_);
    while (ctx_.stats.requests_in_flight.load() > 0 && clock_type::now() < deadline) {
        timer.expires_after(std::chrono::milliseconds(10));
        co_await timer.async_wait(use_tuple);
    }
    auto left = ctx_.stats.requests_in_flight.load();
    if (left > 0)
        log::warn("drain timeout: abandoning in-flight requests (their locks expire by lock_ttl)",
                  {{"in_flight", left}});
    for (auto& w : workers_)
        w->ioc.stop();
    if (on_drained_)
        on_drained_();
    error_code ignored;
    signals_->cancel(ignored);
    control_.stop();
}

void listener::run(const std::function<void()>& on_started, std::function<void()> on_drained)
{
    on_drained_ = std::move(on_drained);
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    for (auto& w : workers_) {
        guards.push_back(asio::make_work_guard(w->ioc));
        asio::co_spawn(w->ioc, accept_loop(*w), asio::detached);
    }
    signals_ = std::make_unique<asio::signal_set>(control_, SIGINT, SIGTERM, SIGHUP);
    wait_for_signal();
    auto control_guard = asio::make_work_guard(control_);
    for (auto& w : workers_)
        w->thread = std::thread([wp = w.get()] { wp->ioc.run(); });
    if (on_started)
        on_started();
    control_.run();
    stop_workers();
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
