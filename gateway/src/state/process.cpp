// SPDX-License-Identifier: Apache-2.0
#include "state/process.hpp"

#include <algorithm>
#include <set>

namespace idemgate::gateway::detail {

restart_only restart_only::of(const config::config& cfg)
{
    restart_only r;
    r.listen = cfg.listen;
    r.listen_proxy = cfg.listen_proxy;
    r.admin_listen = cfg.admin_listen;
    r.threads = cfg.threads;
    r.store = cfg.store;
    r.admin = cfg.admin;
    r.listen_tls = cfg.tls.has_value();
    r.tracing = cfg.tracing;
    r.settlement_notifications = std::any_of(cfg.routes.begin(), cfg.routes.end(), [](const auto& route) {
        return route.idempotency.enabled && route.idempotency.on_in_flight == config::in_flight_mode::wait;
    });
    return r;
}

// From the configuration's key tables (config::describe_keys): the top-level keys that need a
// restart, and the keys a reload applies inside one of them.
const std::vector<std::string>& restart_only::keys()
{
    static const auto names = [] {
        std::vector<std::string> out;
        for (const auto& k : config::describe_keys())
            if (k.restart_only && k.path.find('.') == std::string::npos)
                out.push_back(k.path);
        return out;
    }();
    return names;
}

const std::vector<std::string>& restart_only::reloadable_parts()
{
    static const auto names = [] {
        std::vector<std::string> out;
        std::set<std::string> restart;
        for (const auto& k : config::describe_keys()) {
            auto parent = k.path.substr(0, k.path.rfind('.'));
            if (!k.restart_only && restart.count(parent))
                out.push_back(k.path);
            if (k.restart_only)
                restart.insert(k.path);
        }
        return out;
    }();
    return names;
}

void restart_only::keep_in(config::config& next) const
{
    next.listen = listen;
    next.listen_proxy = listen_proxy;
    next.admin_listen = admin_listen;
    next.threads = threads;
    auto refusal = next.store.refusal; // reloadable
    next.store = store;
    next.store.refusal = refusal;
    auto shadow_window = next.admin.shadow_window; // reloadable
    next.admin = admin;
    next.admin.shadow_window = shadow_window;
    next.tracing = tracing;
}

static_assert(metric::store_condition_series == 1 + store::store_condition_count,
              "idemgate_store_condition: unreachable, then one series per store condition");

bool gateway_context::store_ready() const
{
    auto generation = live();
    if (generation && generation->cfg.readiness.store == config::store_readiness::ignore)
        return true;
    return backend->ready() && backend->status().conditions == 0;
}

bool gateway_context::upstreams_resolved() const
{
    auto generation = live();
    if (!generation)
        return true;
    for (const auto& f : generation->fleets)
        if (!f->resolved())
            return false;
    return true;
}

std::vector<std::string> gateway_context::upstream_lines() const
{
    std::vector<std::string> out;
    if (auto generation = live())
        for (const auto& f : generation->fleets)
            if (!f->resolved())
                out.push_back("upstream " + f->name() +
                              " waiting for its names to resolve (resolve: runtime): " + f->waiting_for());
    return out;
}

std::vector<std::string> gateway_context::store_lines(unsigned& conditions) const
{
    std::vector<std::string> out;
    auto prefix = "store " + std::string(backend->kind()) + " ";
    conditions = 0;
    if (!backend->ready()) {
        conditions |= store_unreachable_bit;
        out.push_back(prefix + "unavailable");
    }
    auto status = backend->status();
    conditions |= status.conditions;
    for (const auto& reason : status.reasons)
        out.push_back(prefix + reason);
    for (const auto& note : status.notes)
        out.push_back(prefix + "note: " + note);
    return out;
}

void gateway_context::refresh_store_gauges()
{
    unsigned conditions = 0;
    store_lines(conditions);
    stats.store_conditions[0].store((conditions & store_unreachable_bit) ? 1 : 0, std::memory_order_relaxed);
    for (std::size_t i = 0; i < store::store_condition_count; ++i)
        stats.store_conditions[i + 1].store((conditions >> i) & 1u, std::memory_order_relaxed);
}

} // namespace idemgate::gateway::detail
