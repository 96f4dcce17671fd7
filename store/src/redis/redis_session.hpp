// SPDX-License-Identifier: Apache-2.0
#pragma once
// One I/O thread's session over the Redis store (redis_store.cpp), made by the backend
// (redis_backend_impl.cpp) from the parts it owns or shares.
#include "redis/client/redis_connection.hpp"

#include <idemgate/store/store.hpp>
#include <memory>

namespace idemgate::store::detail {

class settle_subscriber;
class shard_subscriber;
class cluster_refresher;
class sentinel_monitor;
class replica_waiter;
class complete_resender;
class health_monitor;

struct redis_session_parts {
    std::shared_ptr<command_router> router;
    std::shared_ptr<redis_shared> shared;
    std::shared_ptr<settle_subscriber> subscriber;    // the first session runs it, if any
    std::shared_ptr<detail::shard_subscriber> shards; // cluster wait mode: the first session
    std::shared_ptr<cluster_refresher> refresher;     // cluster mode: the first session
    std::shared_ptr<sentinel_monitor> monitor;        // sentinel mode: the first session
    std::shared_ptr<replica_waiter> waiter;           // consistency strict
    std::shared_ptr<complete_resender> resender;      // consistency strict
    std::shared_ptr<health_monitor> health;           // redis_options::health_checks: the first session
};

std::unique_ptr<session> make_redis_session(redis_session_parts parts);

} // namespace idemgate::store::detail
