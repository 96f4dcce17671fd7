// SPDX-License-Identifier: Apache-2.0
#include "upstream/upstream_fleet.hpp"

#include "upstream/name_lookup.hpp"
#include "upstream/upstream_pool.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdlib>
#include <fstream>
#include <idemgate/common/log.hpp>
#include <idemgate/common/prometheus.hpp>
#include <optional>
#include <sstream>

namespace idemgate::gateway {

namespace asio = boost::asio;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// How long one re-resolution round may take (getaddrinfo runs on Asio's resolver thread; a
// round that takes longer counts as failed and keeps the previous addresses).
constexpr auto resolve_deadline = std::chrono::seconds(5);

std::int64_t now_ticks() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
}

std::string label_of(const tcp::endpoint& ep)
{
    auto a = ep.address();
    return (a.is_v6() ? "[" + a.to_string() + "]" : a.to_string()) + ":" + std::to_string(ep.port());
}

// upstreams.<name>.hosts_file: nullopt when it is not set; else the addresses the file lists for
// `host` (hosts(5) lines "IP name [alias...]", '#' comments), read again at every resolution,
// empty with `error` set when it lists none or cannot be read.
std::optional<std::vector<asio::ip::address>> hosts_file_lookup(const std::string& file,
                                                                const std::string& host, std::string& error)
{
    if (file.empty())
        return std::nullopt;
    std::vector<asio::ip::address> out;
    std::ifstream in(file);
    if (!in) {
        error = "cannot read hosts_file " + file;
        return out;
    }
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream fields(line);
        std::string ip, name;
        if (!(fields >> ip))
            continue;
        bool match = false;
        while (fields >> name)
            match = match || name == host;
        error_code ec;
        auto address = asio::ip::make_address(ip, ec);
        if (match && !ec)
            out.push_back(address);
    }
    if (out.empty())
        error = "\"" + host + "\" is not in hosts_file " + file;
    return out;
}

void add_endpoint(resolution& r, const tcp::endpoint& ep, const std::string& host)
{
    for (const auto& e : r.endpoints)
        if (e.first == ep)
            return; // the same address under two names (or A and AAAA duplicates): once
    if (r.endpoints.size() < config::max_upstream_addresses)
        r.endpoints.emplace_back(ep, host);
}

// One configured address, looked up without a resolver when possible: an IP literal, or the
// upstream's hosts_file. nullopt: it needs the resolver.
std::optional<std::vector<tcp::endpoint>> resolve_locally(const config::endpoint& ep,
                                                          const std::string& hosts_file, std::string& error)
{
    error_code ec;
    auto ip = asio::ip::make_address(ep.host, ec);
    if (!ec)
        return std::vector<tcp::endpoint>{tcp::endpoint(ip, ep.port)};
    auto listed = hosts_file_lookup(hosts_file, ep.host, error);
    if (!listed)
        return std::nullopt;
    std::vector<tcp::endpoint> out;
    for (const auto& a : *listed)
        out.emplace_back(a, ep.port);
    return out;
}

std::string resolve_error(const config::endpoint& ep, const std::string& why)
{
    return "cannot resolve " + ep.to_string() + (why.empty() ? std::string() : ": " + why);
}

// The same as resolve_now, with the resolver's asynchronous lookups under one deadline.
asio::awaitable<resolution> resolve_async(asio::io_context& control, const config::upstream_config& up)
{
    struct entry {
        std::vector<tcp::endpoint> endpoints;
        std::string error;
    };
    struct state {
        state(asio::io_context& ioc, std::size_t n) : timer(ioc), entries(n) {}
        asio::steady_timer timer;
        std::vector<entry> entries;
        std::vector<std::unique_ptr<tcp::resolver>> resolvers;
        std::size_t outstanding = 0;
    };
    auto st = std::make_shared<state>(control, up.addresses.size());
    for (std::size_t i = 0; i < up.addresses.size(); ++i) {
        const auto& ep = up.addresses[i];
        auto& e = st->entries[i];
        if (auto local = resolve_locally(ep, up.hosts_file, e.error)) {
            e.endpoints = std::move(*local);
            continue;
        }
        ++st->outstanding;
        auto& resolver = *st->resolvers.emplace_back(std::make_unique<tcp::resolver>(control));
        resolver.async_resolve(ep.host, std::to_string(ep.port),
                               [st, i](const error_code& ec, const tcp::resolver::results_type& results) {
                                   auto& found = st->entries[i];
                                   if (ec)
                                       found.error = ec.message();
                                   for (const auto& r : results)
                                       found.endpoints.push_back(r.endpoint());
                                   if (--st->outstanding == 0)
                                       st->timer.cancel();
                               });
    }
    resolution r;
    if (st->outstanding > 0) {
        st->timer.expires_after(resolve_deadline);
        co_await st->timer.async_wait(use_tuple);
        if (st->outstanding > 0) {
            for (auto& resolver : st->resolvers)
                resolver->cancel();
            r.error = "resolution took longer than " + std::to_string(resolve_deadline.count()) + "s";
            co_return r;
        }
    }
    for (std::size_t i = 0; i < up.addresses.size(); ++i) {
        const auto& e = st->entries[i];
        if (e.endpoints.empty()) {
            r.error = resolve_error(up.addresses[i], e.error);
            r.endpoints.clear();
            co_return r;
        }
        for (const auto& ep : e.endpoints)
            add_endpoint(r, ep, up.addresses[i].host);
    }
    co_return r;
}

} // namespace

upstream_address::upstream_address(tcp::endpoint ep, std::string from_host)
    : endpoint(std::move(ep)), host(std::move(from_host)), label(label_of(endpoint))
{
}

resolution resolve_now(const config::upstream_config& up)
{
    resolution r;
    for (const auto& ep : up.addresses) {
        std::string why;
        auto endpoints = resolve_locally(ep, up.hosts_file, why);
        if (!endpoints) {
            auto found = lookup_name(ep.host, ep.port, start_lookup_deadline);
            why = found.error;
            endpoints = std::move(found.endpoints);
        }
        if (endpoints->empty()) {
            r.error = resolve_error(ep, why);
            r.endpoints.clear();
            return r;
        }
        for (const auto& x : *endpoints)
            add_endpoint(r, x, ep.host);
    }
    return r;
}

fleet_counters& fleet_registry::counters(const std::string& upstream)
{
    std::lock_guard lock(mutex_);
    auto& slot = counters_[upstream];
    if (!slot)
        slot = std::make_unique<fleet_counters>();
    return *slot;
}

void fleet_registry::render(std::string& out) const
{
    std::lock_guard lock(mutex_);
    prometheus::header(out, "idemgate_upstream_ejections_total", "counter",
                       "Addresses ejected after eject_after_failures consecutive connect failures.");
    for (const auto& [name, c] : counters_)
        prometheus::sample(out, "idemgate_upstream_ejections_total",
                           "upstream=\"" + prometheus::label_value(name) + "\"",
                           static_cast<double>(c->ejections.load()));
    prometheus::header(
        out, "idemgate_upstream_resolve_failures_total", "counter",
        "Background resolutions that failed: re-resolutions (resolve_every; the previous "
        "addresses were kept) and, with resolve: runtime, lookups before the names first resolved.");
    for (const auto& [name, c] : counters_)
        prometheus::sample(out, "idemgate_upstream_resolve_failures_total",
                           "upstream=\"" + prometheus::label_value(name) + "\"",
                           static_cast<double>(c->resolve_failures.load()));
    prometheus::header(out, "idemgate_upstream_duration_seconds", "histogram",
                       "Upstream exchanges, connecting included, answered or failed, by upstream.");
    for (const auto& [name, c] : counters_)
        c->duration.render(out, "idemgate_upstream_duration_seconds",
                           "upstream=\"" + prometheus::label_value(name) + "\"");
}

upstream_fleet::upstream_fleet(config::upstream_config cfg, const resolution& initial,
                               fleet_counters& counters)
    : config_(std::move(cfg)), counters_(counters)
{
    if (initial.endpoints.empty()) {
        resolved_.store(false, std::memory_order_relaxed);
        unresolved_error_ = initial.error;
    }
    auto set = std::make_shared<address_set>();
    for (const auto& [ep, host] : initial.endpoints)
        set->push_back(std::make_shared<upstream_address>(ep, host));
    current_ = std::move(set);
}

std::shared_ptr<const address_set> upstream_fleet::addresses() const
{
    std::lock_guard lock(mutex_);
    return current_;
}

std::shared_ptr<const address_set> upstream_fleet::subscribe(std::weak_ptr<upstream_pool> pool,
                                                             asio::any_io_executor ex)
{
    std::lock_guard lock(mutex_);
    std::erase_if(subscribers_, [](const subscriber& s) { return s.pool.expired(); });
    subscribers_.push_back({std::move(pool), std::move(ex)});
    return current_;
}

void upstream_fleet::connect_failed(upstream_address& a)
{
    auto threshold = config_.eject_after_failures;
    if (threshold == 0)
        return;
    auto n = a.failures.fetch_add(1, std::memory_order_relaxed) + 1;
    // The thread whose failure reached the threshold ejects (once: it resets the count).
    if (n < threshold || !a.failures.compare_exchange_strong(n, 0, std::memory_order_relaxed))
        return;
    auto now = now_ticks();
    a.ejected_at.store(now, std::memory_order_relaxed);
    a.ejected_until.store(now +
                              std::chrono::duration_cast<std::chrono::nanoseconds>(config_.eject_for).count(),
                          std::memory_order_relaxed);
    counters_.ejections.fetch_add(1, std::memory_order_relaxed);
    log::warn("upstream address ejected",
              {{"upstream", name()},
               {"address", a.label},
               {"failures", static_cast<std::int64_t>(n)},
               {"eject_for_ms", static_cast<std::int64_t>(config_.eject_for.count())}});
}

void upstream_fleet::connect_succeeded(upstream_address& a) noexcept
{
    if (a.failures.load(std::memory_order_relaxed) != 0)
        a.failures.store(0, std::memory_order_relaxed);
    // Tried while ejected (every address was) and it answered: back in the rotation at once.
    auto until = a.ejected_until.load(std::memory_order_relaxed);
    if (until > now_ticks() && a.ejected_until.compare_exchange_strong(until, 0, std::memory_order_relaxed)) {
        try {
            log::info("upstream address connects again; ejection ended",
                      {{"upstream", name()}, {"address", a.label}});
        } catch (...) { // NOLINT(bugprone-empty-catch): a log line is not worth a failed request
        }
    }
}

bool upstream_fleet::publish(const resolution& found)
{
    std::lock_guard lock(mutex_);
    bool same = current_->size() == found.endpoints.size();
    for (std::size_t i = 0; same && i < found.endpoints.size(); ++i) {
        bool present = false;
        for (const auto& a : *current_)
            present = present || a->endpoint == found.endpoints[i].first;
        same = present;
    }
    if (same)
        return false; // the same addresses (maybe in another order: DNS rotates them)
    auto next = std::make_shared<address_set>();
    std::string labels;
    for (const auto& [ep, host] : found.endpoints) {
        std::shared_ptr<upstream_address> kept;
        for (const auto& a : *current_)
            if (a->endpoint == ep)
                kept = a;
        next->push_back(kept ? std::move(kept) : std::make_shared<upstream_address>(ep, host));
        labels += (labels.empty() ? "" : ", ") + next->back()->label;
    }
    current_ = std::move(next);
    log::info("upstream addresses changed", {{"upstream", name()}, {"addresses", labels}});
    std::erase_if(subscribers_, [](const subscriber& s) { return s.pool.expired(); });
    for (const auto& s : subscribers_)
        asio::post(s.executor, [pool = s.pool, set = current_] {
            if (auto p = pool.lock())
                p->update_addresses(set);
        });
    return true;
}

void upstream_fleet::start(asio::io_context& control)
{
    if (config_.resolve_every.count() > 0 || !resolved())
        asio::co_spawn(control, resolve_loop(control), asio::detached);
}

std::string upstream_fleet::waiting_for() const
{
    std::lock_guard lock(mutex_);
    return unresolved_error_;
}

asio::awaitable<void> upstream_fleet::resolve_loop(asio::io_context& control)
{
    auto self = shared_from_this(); // the loop keeps its fleet until it sees stop()
    asio::steady_timer timer(control);
    // resolve: runtime and nothing found yet: tried again after 250 ms, the pause doubling up to
    // 5 s (each round bounded by resolve_deadline), until the names resolve.
    auto pause = std::chrono::milliseconds(250);
    while (!resolved() && !stopped_.load(std::memory_order_relaxed)) {
        timer.expires_after(pause);
        co_await timer.async_wait(use_tuple);
        if (stopped_.load(std::memory_order_relaxed))
            co_return;
        auto found = co_await resolve_async(control, config_);
        if (stopped_.load(std::memory_order_relaxed))
            co_return;
        if (!found.error.empty()) {
            counters_.resolve_failures.fetch_add(1, std::memory_order_relaxed);
            std::lock_guard lock(mutex_);
            unresolved_error_ = found.error;
            pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(5));
            continue;
        }
        publish(found);
        resolved_.store(true, std::memory_order_release);
        log::info("upstream names resolved: the upstream is in service", {{"upstream", name()}});
    }
    if (config_.resolve_every.count() == 0)
        co_return;
    while (!stopped_.load(std::memory_order_relaxed)) {
        timer.expires_after(config_.resolve_every);
        co_await timer.async_wait(use_tuple);
        if (stopped_.load(std::memory_order_relaxed))
            break;
        auto found = co_await resolve_async(control, config_);
        if (stopped_.load(std::memory_order_relaxed))
            break;
        if (!found.error.empty()) {
            counters_.resolve_failures.fetch_add(1, std::memory_order_relaxed);
            if (!failing_)
                log::warn("upstream re-resolution failed; keeping the previous addresses (logged once until "
                          "it works again)",
                          {{"upstream", name()}, {"error", found.error}});
            failing_ = true;
            continue;
        }
        if (failing_)
            log::info("upstream re-resolution works again", {{"upstream", name()}});
        failing_ = false;
        publish(found);
    }
}

void upstream_fleet::render_endpoints(std::string& out) const
{
    auto set = addresses();
    auto now = now_ticks();
    std::size_t healthy = 0;
    for (const auto& a : *set)
        healthy += a->healthy(now) ? 1 : 0;
    prometheus::sample(out, "idemgate_upstream_endpoints",
                       "upstream=\"" + prometheus::label_value(name()) + "\"", static_cast<double>(healthy));
}

void upstream_fleet::render_addresses(std::string& out) const
{
    auto set = addresses();
    auto now = now_ticks();
    for (const auto& a : *set)
        prometheus::sample(out, "idemgate_upstream_address_healthy",
                           "upstream=\"" + prometheus::label_value(name()) + "\",address=\"" + a->label +
                               "\"",
                           a->healthy(now) ? 1.0 : 0.0);
}

void render_fleet_metrics(const std::vector<std::shared_ptr<upstream_fleet>>& fleets,
                          const fleet_registry& registry, std::string& out)
{
    prometheus::header(out, "idemgate_upstream_endpoints", "gauge",
                       "Addresses of each upstream not ejected now (every address its names resolve to).");
    for (const auto& f : fleets)
        f->render_endpoints(out);
    prometheus::header(out, "idemgate_upstream_address_healthy", "gauge",
                       "1 while an upstream address is in the rotation, 0 while it is ejected.");
    for (const auto& f : fleets)
        f->render_addresses(out);
    registry.render(out);
}

} // namespace idemgate::gateway
