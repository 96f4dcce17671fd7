#pragma once
// What the Redis store keeps beside a record key (redis_keys.hpp names them): the tombstone
// that outlives the record (tombstone_ttl) and the key's execution count (attempt_header).
// Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::store::detail {

// SET the tombstone (sealed like a record under store.encryption, bound to its own key).
boost::asio::awaitable<boost::system::error_code> bury(command_router& router, redis_shared& shared, scope s,
                                                       const record& tombstone, duration ttl);

// GET it back; a value that does not decode (or is not a tombstone) is record_corrupt.
boost::asio::awaitable<tombstone_result> find_tombstone(command_router& router, redis_shared& shared,
                                                        scope s);

// INCR the execution count and keep it `ttl` (one script: the count never outlives its TTL).
boost::asio::awaitable<count_result> count_execution(command_router& router, redis_shared& shared, scope s,
                                                     duration ttl);

// DEL both for an operator's remove of `record_key`: removing a key frees it.
boost::asio::awaitable<void> remove_side_keys(command_router& router, redis_shared& shared,
                                              std::string_view record_key);

} // namespace idemgate::store::detail
