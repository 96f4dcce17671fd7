// SPDX-License-Identifier: Apache-2.0
#include "redis/redis_backend.hpp"

#include "redis/client/redis_transport.hpp"

namespace idemgate::store::detail {

std::shared_ptr<backend> make_redis_store(const config::redis_config& cfg, const backend_settings& settings)
{
    redis_options options;
    options.eviction_check_interval = cfg.eviction_check_interval;
    options.publish_settled = settings.publish_settled;
    options.publish_removals = settings.publish_removals;
    options.keep_sealed = settings.protected_above;
    options.health_checks = true; // the gateway's store: the command check, the probe and the marker
    return make_redis_backend(cfg, options);
}

std::vector<std::string> check_redis_config(const config::redis_config& cfg)
{
    try {
        make_redis_tls_context(cfg.tls);
    } catch (const config::config_error& e) {
        return e.problems();
    }
    return {};
}

} // namespace idemgate::store::detail
