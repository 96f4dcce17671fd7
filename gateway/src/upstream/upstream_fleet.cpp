// SPDX-License-Identifier: Apache-2.0
#include "upstream/upstream_fleet.hpp"

#include "upstream/upstream_pool.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/prometheus.hpp>
#include <idemgate/common/use_tuple.hpp>

namespace idemgate::gateway {

namespace asio = boost::asio;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

std::int64_t now_ticks() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch()).count();
}

std::string label_of(const tcp::endpoint& ep)
{
    // Built with +=: GCC 12 warns falsely (-Wrestrict) on "[" + std::string once inlined.
    auto a = ep.address();
    std::string out;
    if (a.is_v6())
        out += '[';
    out += a.to_string();
    if (a.is_v6())
        out += ']';
    out += ':';
    out += std::to_string(ep.port());
    return out;
}

} // namespace

upstream_address::upstream_address(tcp::endpoint ep, std::string from_host)
    : endpoint(std::move(ep)), host(std::move(from_host)), label(label_of(endpoint))
{
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
    a.ejections.fetch_add(1, std::memory_order_relaxed);
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
