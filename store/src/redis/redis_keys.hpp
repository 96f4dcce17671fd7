// SPDX-License-Identifier: Apache-2.0
#pragma once
// How the Redis store names what it keeps, given one backend's settings (redis_keys.cpp).
// Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <string>
#include <string_view>

namespace idemgate::store::detail {

// The channel remove() publishes removed record keys on (redis_options::publish_removals).
// Never a record key: those have a second ':' or a '{' after the prefix.
inline std::string removal_channel(std::string_view key_prefix)
{
    std::string out(key_prefix);
    out += ":removed";
    return out;
}

// This backend's Redis key of a scope: hashed_redis_key under options.key_hash_secret
// (store.hash_keys), else redis_key.
std::string redis_key_of(const redis_shared& shared, scope s);

// The keys kept beside a record key: its tombstone (":t") and its execution count (":n"). A
// record key never ends so: its key part has ':' percent-encoded, and a hashed key ends in '}'.
inline std::string tombstone_key(std::string_view record_key)
{
    std::string out(record_key);
    out += ":t";
    return out;
}
inline std::string count_key(std::string_view record_key)
{
    std::string out(record_key);
    out += ":n";
    return out;
}

// A tenant as it may appear in this backend's Redis keys (per-tenant keys such as quotas):
// store::redis_tenant_tag under options.key_hash_secret, so with store.hash_keys no raw tenant
// reaches Redis.
std::string redis_tenant_tag(const redis_shared& shared, std::string_view tenant);

} // namespace idemgate::store::detail
