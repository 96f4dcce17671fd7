#include "redis/client/redis_transport.hpp"

#include <idemgate/store/backend_factory.hpp>
#include <idemgate/store/memory_store.hpp>
#include <idemgate/store/redis_store.hpp>

namespace idemgate::store {

std::shared_ptr<backend> make_backend(const config::store_config& cfg, bool publish_settled)
{
    switch (cfg.type) {
    case config::store_type::redis: {
        redis_options options;
        options.eviction_check_interval = cfg.redis.eviction_check_interval;
        options.publish_settled = publish_settled;
        options.publish_removals = cfg.local_tier.max_bytes > 0;
        if (cfg.hash_keys)
            options.key_hash_secret = cfg.key_secret;
        options.cipher = record_cipher(cfg.encryption.key, cfg.encryption.previous_key);
        return make_redis_backend(cfg.redis, options);
    }
    case config::store_type::memory: break;
    }
    memory_options options;
    options.max_entries = cfg.memory.max_entries;
    options.max_bytes = cfg.memory.max_bytes;
    return make_memory_backend(std::move(options));
}

std::vector<std::string> check_backend_config(const config::store_config& cfg)
{
    if (cfg.type != config::store_type::redis)
        return {};
    try {
        detail::make_redis_tls_context(cfg.redis.tls);
    } catch (const config::config_error& e) {
        return e.problems();
    }
    return {};
}

} // namespace idemgate::store
