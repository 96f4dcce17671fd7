// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store's record lookup (admin API) and what it keeps beside a record key (redis_keys.hpp names
// them): the tombstone that outlives the record (tombstone_ttl) and the key's execution count
// (attempt_header). Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::store::detail {

// A stored value that does not decode, or is sealed and does not open (unknown key, altered,
// moved from another key), is never served: counted, logged (rate-limited), record_corrupt.
boost::system::error_code decode_logged(redis_shared& shared, std::string_view key, std::string_view bytes,
                                        record& out);

// The admin API's record lookup: GET then PTTL (two round trips; off the request path).
boost::asio::awaitable<lookup_result> lookup_record(command_router& router, redis_shared& shared, scope s);

// SET the tombstone (sealed like a record under store.encryption, bound to its own key).
boost::asio::awaitable<boost::system::error_code> bury(command_router& router, redis_shared& shared, scope s,
                                                       const record& tombstone, duration ttl);

// GET it back; a value that does not decode (or is not a tombstone) is record_corrupt.
boost::asio::awaitable<tombstone_result> find_tombstone(command_router& router, redis_shared& shared,
                                                        scope s);

// INCR the execution count and keep it `ttl` (one script: the count never outlives its TTL).
boost::asio::awaitable<count_result> count_execution(command_router& router, redis_shared& shared, scope s,
                                                     duration ttl);

// PEXPIRE the record key while it holds the in-flight record of `owner_token` (not_owner
// otherwise: a completed record keeps its record_ttl).
boost::asio::awaitable<boost::system::error_code> extend_lock(command_router& router, redis_shared& shared,
                                                              scope s, std::string_view owner_token,
                                                              duration lock_ttl);

// DEL both for an operator's remove of `record_key`: removing a key frees it.
boost::asio::awaitable<void> remove_side_keys(command_router& router, redis_shared& shared,
                                              std::string_view record_key);

} // namespace idemgate::store::detail
