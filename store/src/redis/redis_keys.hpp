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

// This backend's Redis key of a scope: <prefix>:{<digest>} for a hashed scope (store.hash_keys,
// from the protection decorator: hashed_redis_key's spelling), else redis_key.
std::string redis_key_of(const redis_shared& shared, scope s);

// A shadow route's hashes: <prefix>:s:{<route>}:<part>, the route its path_prefix (escaped, with
// its braces), the part "all" (the since-start totals) or a window bucket's number. Never a
// record key (whose escaped parts leave it two ':' after the prefix, or one before a '{'), and
// a route's keys share one Redis Cluster slot.
std::string shadow_key(std::string_view key_prefix, std::string_view route, std::string_view part);

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

} // namespace idemgate::store::detail
