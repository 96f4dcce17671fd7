// SPDX-License-Identifier: Apache-2.0
// The in-process store (store.type: memory): reserve, complete, release, lookup and remove on
// record_shards (record_shards.hpp), settlement notifications for waiting duplicates and tenant
// quotas in process; one backend shared by every I/O thread, a session per thread.
#include "memory/memory_engine.hpp"

namespace idemgate::store {

std::string scope_map_key(scope s)
{
    std::string k = std::to_string(s.tenant.size());
    k.reserve(k.size() + 1 + s.tenant.size() + s.key.size());
    k.push_back(':');
    k.append(s.tenant);
    k.append(s.key);
    return k;
}

std::size_t charged_bytes(std::string_view map_key, const record& r) noexcept
{
    std::size_t n = 160 + map_key.size() + r.fingerprint.size() + r.owner_token.size() +
                    r.response.reason.size() + r.response.body.size();
    for (const auto& h : r.response.headers)
        n += 64 + h.name.size() + h.value.size();
    return n;
}

std::shared_ptr<backend> make_memory_backend(memory_options options)
{
    return std::make_shared<detail::memory_backend>(std::move(options));
}

std::shared_ptr<backend> detail::make_memory_store(const config::memory_config& cfg, const backend_settings&)
{
    memory_options options;
    options.max_entries = cfg.max_entries;
    options.max_bytes = cfg.max_bytes;
    return make_memory_backend(std::move(options));
}

// The memory store keeps decoded records inside this process (no dump, no replica, no network),
// so neither hash_keys nor encryption is applied to it; say so rather than accept them silently.
std::vector<std::string> detail::memory_warnings(const config::memory_config&,
                                                 const config::store_config& store)
{
    std::vector<std::string> out;
    if (store.encryption.enabled())
        out.push_back("store.encryption: the memory store does not encrypt records (they never leave this "
                      "process); encryption applies to store.type: redis");
    if (store.hash_keys)
        out.push_back("store.hash_keys: the memory store does not hash keys (they never leave this process); "
                      "hash_keys applies to store.type: redis");
    return out;
}

std::size_t memory_store_shard(scope s)
{
    return detail::shard_of(scope_map_key(s));
}

std::optional<memory_stats> memory_store_stats(const backend& b)
{
    if (auto* m = dynamic_cast<const detail::memory_backend*>(&b))
        return m->stats();
    return std::nullopt;
}

} // namespace idemgate::store
