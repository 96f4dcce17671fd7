// SPDX-License-Identifier: Apache-2.0
#include "runtime/reload.hpp"

#include "runtime/client_connection.hpp"
#include "runtime/service_notify.hpp"
#include "transport/tls.hpp"
#include "upstream/upstream_tls.hpp"

#include <chrono>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <stdexcept>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;

namespace {

// Each route's counters, then the unrouted requests', for a generation made of `cfg`.
std::vector<route_counters*> route_stats_for(gateway_context& ctx, const config::config& cfg)
{
    std::vector<route_counters*> out;
    for (const auto& r : cfg.routes)
        out.push_back(&ctx.route_stats.counters(r.path_prefix));
    out.push_back(&ctx.route_stats.counters(""));
    return out;
}

// The application log's threshold of a generation, from its first request on.
void apply_log_level(config::log_severity level)
{
    switch (level) {
    case config::log_severity::debug: log::set_level(log::level::debug); break;
    case config::log_severity::info: log::set_level(log::level::info); break;
    case config::log_severity::warn: log::set_level(log::level::warn); break;
    case config::log_severity::error: log::set_level(log::level::error); break;
    }
}

} // namespace

std::string upstream_problem(const config::upstream_config& up, const std::string& error)
{
    return "upstreams." + up.name + (up.addresses.size() > 1 ? ".addresses" : ".address") + ": " + error;
}

namespace {

// Every address of every upstream (blocking: start-up and reloads, on the control thread), as
// one fleet per upstream. A name that does not resolve is a problem naming its key path, unless
// the upstream resolves at runtime: then its fleet starts empty and keeps trying (fleet start()).
std::vector<std::shared_ptr<upstream_fleet>> make_fleets(gateway_context& ctx, const config::config& cfg,
                                                         std::vector<std::string>& problems)
{
    std::vector<std::shared_ptr<upstream_fleet>> out;
    for (const auto& up : cfg.upstreams) {
        auto found = resolve_now(up);
        if (!found.error.empty() && up.resolve == config::resolve_mode::runtime)
            log::warn(
                "upstream names do not resolve yet; resolving in the background, not ready until they do",
                {{"upstream", up.name}, {"error", found.error}});
        else if (!found.error.empty())
            problems.push_back(upstream_problem(up, found.error));
        out.push_back(std::make_shared<upstream_fleet>(up, found, ctx.fleet_stats.counters(up.name)));
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

void reloader::publish_first(const config::config& cfg)
{
    // What the routes and tenants ask of the store, which must offer it (as --check says).
    std::vector<std::string> problems = store::check_store_capabilities(cfg, cfg.store.type());
    if (!problems.empty())
        throw std::runtime_error(problems.front());
    auto fleets = make_fleets(ctx_, cfg, problems);
    if (!problems.empty())
        throw std::runtime_error(problems.front());

    // TLS contexts are built once and shared by every thread (a bad file throws config_error).
    std::shared_ptr<asio::ssl::context> listen_tls;
    if (cfg.tls)
        listen_tls = make_server_tls_context(*cfg.tls, alpn_protocols(cfg.http2.enabled));
    std::vector<std::shared_ptr<upstream_tls>> upstream_contexts;
    for (const auto& up : cfg.upstreams)
        upstream_contexts.push_back(make_upstream_tls(up));

    auto live = std::make_shared<live_config>();
    live->cfg = cfg;
    live->route_stats = route_stats_for(ctx_, live->cfg);
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
    apply_log_level(cfg.log_level);
    ctx_.publish(std::move(live));
    loaded(true);
}

void reloader::loaded(bool applied)
{
    ctx_.stats.config_last_reload_successful.store(applied ? 1 : 0, std::memory_order_relaxed);
    if (applied)
        ctx_.stats.config_last_reload_success_time.store(
            std::chrono::duration_cast<std::chrono::seconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count(),
            std::memory_order_relaxed);
}

bool reloader::reload(std::string_view trigger, std::vector<std::string>& problems)
{
    // The service manager sees the reload begin and end, whatever its result.
    notify_reloading();
    struct ready_again {
        ~ready_again() { notify_service("READY=1\nSTATUS=serving"); }
    } ready_again;
    problems.clear();
    std::string text;
    config::config next;
    std::vector<config::text_position> positions;
    try {
        text = config::read_file(ctx_.config_path);
        next = config::load_text(text, ctx_.config_path);
    } catch (const config::config_error& e) {
        problems = e.problems();
        positions = e.positions();
    }
    std::vector<std::shared_ptr<upstream_fleet>> fleets;
    std::vector<std::shared_ptr<upstream_tls>> upstream_contexts;
    // Against the running store (store.type is restart-only): a route may not start asking it for
    // what it does not offer.
    if (problems.empty())
        problems = store::check_store_capabilities(next, ctx_.boot.store.type());
    if (problems.empty())
        fleets = make_fleets(ctx_, next, problems);
    // TLS on listen: on or off needs a restart (the connection loop differs); while on, the
    // certificate, key, client CA and policy are read again, so a renewed certificate is served to
    // new connections. Without a change the running context is kept (and its session tickets).
    bool tls_switched = next.tls.has_value() != ctx_.boot.listen_tls;
    auto listen_tls = ctx_.live()->listen_tls;
    if (problems.empty()) {
        // HTTPS upstreams: their files are read again (a renewed CA or client certificate).
        try {
            for (const auto& up : next.upstreams)
                upstream_contexts.push_back(make_upstream_tls(up));
            if (next.tls && !tls_switched)
                listen_tls = make_server_tls_context(*next.tls, alpn_protocols(next.http2.enabled));
        } catch (const config::config_error& e) {
            problems = e.problems();
        }
    }
    if (!problems.empty()) {
        // FILE:LINE:COLUMN: before each, as --check and start-up print them.
        problems = config::located_problems(ctx_.config_path, text, problems, std::move(positions));
        ctx_.stats.config_reloads[1].fetch_add(1, std::memory_order_relaxed);
        loaded(false);
        log::error("configuration reload failed; still serving the previous configuration",
                   {{"trigger", trigger}, {"file", ctx_.config_path}, {"problems", problems.size()}});
        for (const auto& p : problems)
            log::error("configuration reload: problem", {{"problem", p}});
        ctx_.reloads.record({std::chrono::system_clock::now(), false, std::string(trigger), problems,
                             text.empty() ? std::string() : sha256_hex(text), ctx_.live()->generation});
        return false;
    }
    // What a running process cannot change: its sockets, threads, store and admin API.
    for (const auto& key :
         config::changed_sections(boot_text_, text, restart_only::keys(), restart_only::reloadable_parts()))
        log::warn("configuration reload: this setting needs a restart; the running value is kept",
                  {{"key", key}});
    if (tls_switched)
        log::warn("configuration reload: turning TLS on listen on or off needs a restart; the running value "
                  "is kept",
                  {{"key", "tls"}});
    ctx_.boot.keep_in(next);
    // The access log's file is opened once, at start (SIGUSR1 reopens that path).
    if (const auto running = ctx_.access_log ? ctx_.access_log->file_path() : std::string_view();
        next.access_log_options.path != running) {
        log::warn("configuration reload: this setting needs a restart; the running value is kept",
                  {{"key", "access_log.path"}});
        next.access_log_options.path = running;
    }
    ctx_.backend->set_refusal_policy({next.store.refusal.errors, next.store.refusal.window});
    if (tls_switched)
        next.tls = ctx_.live()->cfg.tls;
    if (any_route_waits(next) && !ctx_.boot.settlement_notifications)
        log::warn("configuration reload: on_in_flight: wait needs a restart to take effect (the store was "
                  "started without settlement notifications: waiting duplicates would time out)",
                  {{"key", "routes[].idempotency.on_in_flight"}});
    for (const auto& w : store::backend_warnings(next.store))
        log::warn("risky configuration", {{"warning", w}});
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
    live->route_stats = route_stats_for(ctx_, live->cfg);
    auto routes = live->cfg.routes.size();
    auto upstreams = live->cfg.upstreams.size();
    auto generation = live->generation;
    auto sha = live->sha256;
    ctx_.publish(std::move(live));
    apply_log_level(ctx_.live()->cfg.log_level);
    if (ctx_.access_log) {
        const auto& o = ctx_.live()->cfg.access_log_options;
        ctx_.access_log->apply({o.queue_lines, o.batch_bytes, o.flush_interval});
    }
    ctx_.stats.config_reloads[0].fetch_add(1, std::memory_order_relaxed);
    loaded(true);
    ctx_.reloads.record({std::chrono::system_clock::now(), true, std::string(trigger), {}, sha, generation});
    log::lifecycle("configuration reloaded", {{"trigger", trigger},
                                              {"generation", static_cast<std::int64_t>(generation)},
                                              {"sha256", sha},
                                              {"routes", static_cast<std::int64_t>(routes)},
                                              {"upstreams", static_cast<std::int64_t>(upstreams)}});
    return true;
}

} // namespace idemgate::gateway::detail
