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

std::vector<std::string> redis_warnings(const config::redis_config& cfg, const config::store_config&)
{
    if (cfg.tls.enabled && !cfg.tls.verify)
        return {"store.redis.tls.verify: false: the Redis server's certificate and name are not checked, so "
                "anyone on the network path can impersonate it (for testing only)"};
    return {};
}

std::string redis_consistency_guarantee(const config::redis_config& r)
{
    const auto n = std::to_string(r.min_replicas_ack);
    if (r.consistency == config::redis_consistency::strict)
        return "store.redis.consistency strict: the upstream runs only after " + n +
               " replica(s) acknowledged the reservation within wait_timeout (" +
               std::to_string(r.wait_timeout.count()) +
               "ms), else 503 store-unavailable with nothing run; a failover that promotes such a "
               "replica re-opens no key. Costs one WAIT per first execution; with only " +
               n + " replica(s), every new key is refused while one is missing";
    if (r.min_replicas_ack > 0)
        return "store.redis.consistency async with min_replicas_ack " + n +
               ": completed records are WAITed for (and counted when not acknowledged), reservations "
               "are not: a failover while a request runs can re-open its key and let a retry run again";
    return "store.redis.consistency async: reservations and records reach the primary only; a failover "
           "before a replica has them can re-open a key and let a retry run again";
}

} // namespace idemgate::store::detail
