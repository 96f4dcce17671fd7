// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store's entry points for the backend table (backend_table.hpp). Private to the store
// library.
#include "backend_table.hpp"

#include <idemgate/config/config.hpp>
#include <idemgate/store/redis_store.hpp>
#include <memory>
#include <string>
#include <vector>

namespace idemgate::store::detail {

// store.type: redis, from store.redis (hash_keys and encryption: the protection decorator above it).
std::shared_ptr<backend> make_redis_store(const config::redis_config& cfg, const backend_settings& settings);

// What config::load cannot check in store.redis: the TLS files OpenSSL must accept (PEM
// certificates, a private key that matches its certificate).
std::vector<std::string> check_redis_config(const config::redis_config& cfg);

// store.redis.tls.verify: false (while TLS is on): the server is not authenticated.
std::vector<std::string> redis_warnings(const config::redis_config& cfg, const config::store_config& store);

// What store.redis.consistency guarantees across a failover, and what it costs.
std::string redis_consistency_guarantee(const config::redis_config& cfg);

// Appends the Redis store's counters and command latency histogram (idemgate_redis_*).
void render_redis_metrics(const redis_stats& s, std::string& out);

} // namespace idemgate::store::detail
