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

using config::store_type;

// Every backend, in the order of config::store_type (its section's alternative says its type).
constexpr std::array backends{
    detail::backend_row<config::memory_config, detail::make_memory_store>("memory", all_capabilities),
    detail::backend_row<config::redis_config, detail::make_redis_store, detail::check_redis_config,
                        detail::redis_warnings, detail::redis_consistency_guarantee>("redis",
                                                                                     all_capabilities),
#ifdef IDEMGATE_TEST_BACKEND
    detail::backend_row<config::map_config, detail::make_map_store>("map", detail::map_capabilities),
#else
    detail::absent_row<config::map_config>("map"),
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
    auto made = backend_for(cfg.type()).make(cfg, settings);
    if (!made || !protection.enabled())
        return made; // no wrapper, nothing on the path
    return protect_backend(std::move(made), std::move(protection));
}

std::vector<std::string> check_backend_config(const config::store_config& cfg)
{
    return backend_for(cfg.type()).check(cfg);
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

std::vector<std::string> backend_warnings(const config::store_config& cfg)
{
    return backend_for(cfg.type()).warnings(cfg);
}

std::string consistency_guarantee(const config::store_config& cfg)
{
    return backend_for(cfg.type()).guarantee(cfg);
}

} // namespace idemgate::store
