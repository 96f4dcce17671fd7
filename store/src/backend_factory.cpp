#include "backend_table.hpp"
#include "memory/memory_backend.hpp"
#include "redis/redis_backend.hpp"

#include <array>
#include <cstddef>
#include <idemgate/store/backend_factory.hpp>

namespace idemgate::store {

namespace {

using config::store_config;
using config::store_type;

// Every backend, in the order of config::store_type.
constexpr std::array backends{
    detail::backend_row<&store_config::memory, detail::make_memory_store>(store_type::memory, "memory"),
    detail::backend_row<&store_config::redis, detail::make_redis_store, detail::check_redis_config>(
        store_type::redis, "redis"),
};

constexpr bool in_type_order()
{
    for (std::size_t i = 0; i < backends.size(); ++i)
        if (backends[i].type != static_cast<store_type>(i))
            return false;
    return true;
}
static_assert(in_type_order(), "one row per store_type, in its order");

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
    if (cfg.hash_keys)
        settings.key_hash_secret = cfg.key_secret;
    settings.encryption = cfg.encryption;
    return backend_for(cfg.type).make(cfg, settings);
}

std::vector<std::string> check_backend_config(const config::store_config& cfg)
{
    return backend_for(cfg.type).check(cfg);
}

} // namespace idemgate::store
