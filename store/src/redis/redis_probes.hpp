// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store's schedule of held keys' probes (session::schedule_probe, claim_probes,
// unschedule_probe): one sorted set, entry -> due time, shared by every gateway on the store.
// Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::store::detail {

// The sorted set's key: "<prefix>:p:{reconcile}:due". One hash tag, so a Redis Cluster keeps the
// whole schedule in one slot; the ':' after the tag never appears in a record key's key part
// (it is percent-encoded there), so no record key reads alike.
std::string probe_schedule_key(std::string_view key_prefix);

// ZADD entry at due_unix_ms.
boost::asio::awaitable<boost::system::error_code> schedule_probe(command_router& router, redis_shared& shared,
                                                                 std::string_view entry,
                                                                 std::int64_t due_unix_ms);

// ZRANGEBYSCORE the due entries (at most `limit`), then for each ZREM: the one gateway whose ZREM
// removed it has claimed it, and ZADDs it back at now + lease.
boost::asio::awaitable<probe_claim> claim_probes(command_router& router, redis_shared& shared,
                                                 std::int64_t now_unix_ms, duration lease, std::size_t limit);

// ZREM entry.
boost::asio::awaitable<boost::system::error_code>
unschedule_probe(command_router& router, redis_shared& shared, std::string_view entry);

} // namespace idemgate::store::detail
