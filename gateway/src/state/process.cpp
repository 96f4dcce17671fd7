// SPDX-License-Identifier: Apache-2.0
#include "state/process.hpp"

#include <algorithm>

namespace idemgate::gateway::detail {

restart_only restart_only::of(const config::config& cfg)
{
    restart_only r;
    r.listen = cfg.listen;
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

const std::vector<std::string>& restart_only::keys()
{
    static const std::vector<std::string> names{"listen", "admin_listen", "threads",
                                                "store",  "admin",        "tracing"};
    return names;
}

const std::vector<std::string>& restart_only::reloadable_parts()
{
    static const std::vector<std::string> names{"store.refusal"};
    return names;
}

void restart_only::keep_in(config::config& next) const
{
    next.listen = listen;
    next.admin_listen = admin_listen;
    next.threads = threads;
    auto refusal = next.store.refusal; // reloadable
    next.store = store;
    next.store.refusal = refusal;
    next.admin = admin;
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
