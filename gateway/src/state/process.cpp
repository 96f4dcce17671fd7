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

} // namespace idemgate::gateway::detail
