#include "runtime/listener.hpp"

#include "http1/http_connection.hpp"
#include "idempotency/local_tier.hpp"
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
#include <openssl/evp.h>
#include <sstream>
#include <sys/socket.h>
#include <system_error>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

listener::listener(gateway_context& ctx, asio::io_context& control) : ctx_(ctx), control_(control) {}

listener::~listener()
{
    stop_workers();
}

namespace {

// Every address of every upstream (blocking: start-up and reloads, on the control thread), as
// one fleet per upstream. A name that does not resolve is a problem naming its key path.
std::vector<std::shared_ptr<upstream_fleet>> make_fleets(asio::io_context& ioc, gateway_context& ctx,
                                                         const config::config& cfg,
                                                         std::vector<std::string>& problems)
{
    std::vector<std::shared_ptr<upstream_fleet>> out;
    for (const auto& up : cfg.upstreams) {
        auto found = resolve_now(ioc, up);
        if (!found.error.empty())
            problems.push_back("upstreams." + up.name +
                               (up.addresses.size() > 1 ? ".addresses" : ".address") + ": " + found.error);
        out.push_back(std::make_shared<upstream_fleet>(up, found, ctx.fleet_stats.counters(up.name)));
    }
    return out;
}

std::string sha256_hex(std::string_view text)
{
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(text.data(), text.size(), digest, &len, EVP_sha256(), nullptr);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out.push_back(hex[digest[i] >> 4]);
        out.push_back(hex[digest[i] & 0xf]);
    }
    return out;
}

bool any_route_waits(const config::config& cfg)
{
    for (const auto& r : cfg.routes)
        if (r.idempotency.enabled && r.idempotency.on_in_flight == config::in_flight_mode::wait)
            return true;
    return false;
}

} // namespace

void listener::bind()
{
    const auto& cfg = ctx_.cfg;
    std::vector<std::string> problems;
    auto fleets = make_fleets(control_, ctx_, cfg, problems);
    if (!problems.empty())
        throw std::runtime_error(problems.front());

    // TLS contexts are built once and shared by every thread (a bad file throws config_error).
    std::shared_ptr<asio::ssl::context> listen_tls;
    if (cfg.tls)
        listen_tls = make_server_tls_context(*cfg.tls);
    ctx_.listen_tls = listen_tls != nullptr;
    std::vector<std::shared_ptr<upstream_tls>> upstream_contexts;
    for (const auto& up : cfg.upstreams)
        upstream_contexts.push_back(make_upstream_tls(up));

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

    auto live = std::make_shared<live_config>();
    live->cfg = cfg;
    live->fleets = std::move(fleets);
    live->upstream_contexts = std::move(upstream_contexts);
    live->listen_tls = std::move(listen_tls);
    live->generation = 1;
    if (!ctx_.config_path.empty()) {
        try {
            boot_text_ = config::read_file(ctx_.config_path);
            live->sha256 = sha256_hex(boot_text_);
        } catch (const config::config_error&) {
            // Unreadable again already: the next reload will say so.
        }
    }
    ctx_.publish(std::move(live));
}

bool listener::reload(std::string_view trigger, std::vector<std::string>& problems)
{
    problems.clear();
    std::string text;
    config::config next;
    try {
        text = config::read_file(ctx_.config_path);
        next = config::load_text(text, ctx_.config_path);
    } catch (const config::config_error& e) {
        problems = e.problems();
    }
    std::vector<std::shared_ptr<upstream_fleet>> fleets;
    std::vector<std::shared_ptr<upstream_tls>> upstream_contexts;
    if (problems.empty())
        fleets = make_fleets(control_, ctx_, next, problems);
    // TLS on listen: on or off needs a restart (the connection loop differs); while on, the
    // certificate, key, client CA and policy are read again, so a renewed certificate is served to
    // new connections. Without a change the running context is kept (and its session tickets).
    bool tls_switched = next.tls.has_value() != ctx_.cfg.tls.has_value();
    auto listen_tls = ctx_.live()->listen_tls;
    if (problems.empty()) {
        // HTTPS upstreams: their files are read again (a renewed CA or client certificate).
        try {
            for (const auto& up : next.upstreams)
                upstream_contexts.push_back(make_upstream_tls(up));
            if (next.tls && !tls_switched)
                listen_tls = make_server_tls_context(*next.tls);
        } catch (const config::config_error& e) {
            problems = e.problems();
        }
    }
    if (!problems.empty()) {
        ctx_.stats.config_reloads[1].fetch_add(1, std::memory_order_relaxed);
        log::error("configuration reload failed; still serving the previous configuration",
                   {{"trigger", trigger}, {"file", ctx_.config_path}, {"problems", problems.size()}});
        for (const auto& p : problems)
            log::error("configuration reload: problem", {{"problem", p}});
        return false;
    }
    // What a running process cannot change: its sockets, threads, store and admin API.
    for (const auto& key :
         config::changed_sections(boot_text_, text, {"listen", "admin_listen", "threads", "store", "admin"}))
        log::warn("configuration reload: this setting needs a restart; the running value is kept",
                  {{"key", key}});
    if (tls_switched)
        log::warn("configuration reload: turning TLS on listen on or off needs a restart; the running value "
                  "is kept",
                  {{"key", "tls"}});
    next.listen = ctx_.cfg.listen;
    next.admin_listen = ctx_.cfg.admin_listen;
    next.threads = ctx_.cfg.threads;
    next.store = ctx_.cfg.store;
    next.admin = ctx_.cfg.admin;
    if (tls_switched)
        next.tls = ctx_.cfg.tls;
    if (any_route_waits(next) && !any_route_waits(ctx_.cfg))
        log::warn("configuration reload: on_in_flight: wait needs a restart to take effect (the store was "
                  "started without settlement notifications: waiting duplicates would time out)",
                  {{"key", "routes[].idempotency.on_in_flight"}});
    for (const auto& w : config::warnings(next))
        log::warn("risky configuration", {{"warning", w}});

    auto live = std::make_shared<live_config>();
    live->generation = ctx_.live()->generation + 1;
    live->sha256 = sha256_hex(text);
    // The previous generation's fleets stop re-resolving (their pools keep serving the requests
    // that started under it); the new ones start.
    for (const auto& f : ctx_.live()->fleets)
        f->stop();
    for (const auto& f : fleets)
        f->start(control_);
    live->fleets = std::move(fleets);
    live->upstream_contexts = std::move(upstream_contexts);
    live->listen_tls = std::move(listen_tls);
    live->cfg = std::move(next);
    auto routes = live->cfg.routes.size();
    auto upstreams = live->cfg.upstreams.size();
    auto generation = live->generation;
    auto sha = live->sha256;
    ctx_.publish(std::move(live));
    ctx_.stats.config_reloads[0].fetch_add(1, std::memory_order_relaxed);
    log::info("configuration reloaded", {{"trigger", trigger},
                                         {"generation", static_cast<std::int64_t>(generation)},
                                         {"sha256", sha},
                                         {"routes", static_cast<std::int64_t>(routes)},
                                         {"upstreams", static_cast<std::int64_t>(upstreams)}});
    return true;
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
            // Reload; never the default action (exit), which would drop reservations in flight.
            if (!drain_started_) {
                std::vector<std::string> problems;
                reload("SIGHUP", problems);
            }
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
    for (const auto& f : ctx_.live()->fleets)
        f->start(control_); // re-resolution (resolve_every), once per process
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
