// SPDX-License-Identifier: Apache-2.0
#include "backend_table.hpp"
#include "memory/memory_backend.hpp"
#include "redis/redis_backend.hpp"
#ifdef IDEMGATE_TEST_BACKEND
#include "map/map_backend.hpp"
#endif

#include <array>
#include <cstddef>
#include <idemgate/common/enum_count.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <idemgate/store/protected_backend.hpp>

namespace idemgate::store {

namespace {

using config::store_config;
using config::store_type;

// Every backend, in the order of config::store_type.
constexpr std::array backends{
    detail::backend_row<&store_config::memory, detail::make_memory_store>(store_type::memory, "memory",
                                                                          all_capabilities),
    detail::backend_row<&store_config::redis, detail::make_redis_store, detail::check_redis_config>(
        store_type::redis, "redis", all_capabilities),
#ifdef IDEMGATE_TEST_BACKEND
    detail::backend_row<nullptr, detail::make_map_store>(store_type::map, "map", detail::map_capabilities),
#else
    detail::absent_row(store_type::map, "map"),
#endif
};

constexpr bool in_type_order()
{
    for (std::size_t i = 0; i < backends.size(); ++i)
        if (backends[i].type != static_cast<store_type>(i))
            return false;
    return true;
}
static_assert(in_type_order() && backends.size() == enum_count<store_type>,
              "one row per store_type, in its order");

const detail::backend_entry& backend_for(store_type type)
{
    auto i = static_cast<std::size_t>(type);
    return i < backends.size() ? backends[i] : backends[0];
}

} // namespace

std::shared_ptr<backend> make_backend(const config::store_config& cfg, bool publish_settled)
{
    detail::backend_settings settings;
    settings.publish_settled = publish_settled;
    settings.publish_removals = cfg.local_tier.max_bytes > 0;
    record_protection protection;
    if (cfg.hash_keys)
        protection.key_secret = cfg.key_secret;
    protection.cipher = record_cipher(cfg.encryption.key, cfg.encryption.previous_key);
    settings.protected_above = protection.enabled();
    auto made = backend_for(cfg.type).make(cfg, settings);
    if (!made || !protection.enabled())
        return made; // no wrapper, nothing on the path
    return protect_backend(std::move(made), std::move(protection));
}

std::vector<std::string> check_backend_config(const config::store_config& cfg)
{
    return backend_for(cfg.type).check(cfg);
}

unsigned backend_capabilities(config::store_type type)
{
    return backend_for(type).capabilities;
}

std::vector<std::string> check_store_capabilities(const config::config& cfg, config::store_type type)
{
    const auto& row = backend_for(type);
    return missing_capabilities(cfg, row.capabilities, row.name);
}

std::string consistency_guarantee(const config::store_config& cfg)
{
    if (cfg.type != config::store_type::redis)
        return {};
    const auto& r = cfg.redis;
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

} // namespace idemgate::store
