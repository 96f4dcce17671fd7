// SPDX-License-Identifier: Apache-2.0
// Matching what a configuration asks of the store against what a backend offers: each route's
// and tenant's setting that needs a capability, refused up front when the backend lacks it, so a
// request never finds it missing.
#include <idemgate/store/backend_factory.hpp>

namespace idemgate::store {

namespace {

bool offers(unsigned offered, capability c) noexcept
{
    return (offered & static_cast<unsigned>(c)) != 0;
}

} // namespace

std::vector<std::string> missing_capabilities(const config::config& cfg, unsigned offered,
                                              std::string_view type_name)
{
    std::vector<std::string> out;
    const std::string store = "store.type " + std::string(type_name) + " ";
    auto ask = [&](capability c, const std::string& path, std::string_view lacks) {
        if (!offers(offered, c))
            out.push_back(path + ": " + store + std::string(lacks));
    };
    for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
        const auto& p = cfg.routes[i].idempotency;
        if (!p.enabled)
            continue;
        const std::string at = "routes[" + std::to_string(i) + "].idempotency.";
        if (p.on_in_flight == config::in_flight_mode::wait)
            ask(capability::wait, at + "on_in_flight", "cannot make a duplicate wait for the first answer");
        if (p.tombstone_ttl.count() > 0)
            ask(capability::tombstones, at + "tombstone_ttl", "does not keep tombstones");
        if (!p.attempt_header.empty())
            ask(capability::attempts, at + "attempt_header", "does not count executions");
        if (p.mode == config::route_mode::shadow)
            ask(capability::shadow_report, at + "mode", "does not keep a shadow report");
        if (p.reconcile.enabled())
            ask(capability::probes, at + "reconcile.path", "does not keep a schedule of probes");
        // A held key goes on the index of held keys, which the admin API lists.
        bool holds_status = false;
        for (unsigned status = 100; status < 600 && !holds_status; ++status)
            holds_status = p.on_status.action_for(status) == config::status_action::hold;
        if (p.on_unknown_outcome == config::unknown_outcome_mode::hold)
            ask(capability::held, at + "on_unknown_outcome", "does not keep an index of held keys");
        else if (holds_status)
            ask(capability::held, at + "on_status", "does not keep an index of held keys");
    }
    for (const auto& [name, tenant] : cfg.tenants) {
        const char* key = tenant.max_in_flight > 0 ? ".max_in_flight" : ".new_keys_per_second";
        if (tenant.limited())
            ask(capability::quotas, "tenants." + name + key, "does not keep tenant quotas");
    }
    return out;
}

} // namespace idemgate::store
