// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store's shadow report (store::shadow_tally): per route, one hash of since-start
// totals and one hash per window bucket (redis_keys.hpp names them), each field a figure.
// Single-key commands only, so it works the same in Cluster mode. Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::store::detail {

// HINCRBY per figure into the totals (then PEXPIRE shadow_keep) and into the bucket of
// now_unix_ms (then PEXPIRE: the window and one bucket more). Each count added is set to 0.
boost::asio::awaitable<boost::system::error_code>
add_shadow_counts(command_router& router, redis_shared& shared, std::string_view route,
                  shadow_counts& since_start, shadow_counts& window, std::int64_t now_unix_ms);

// HGETALL of the totals and of each of the window's buckets (off the request path).
boost::asio::awaitable<shadow_totals> read_shadow_counts(command_router& router, redis_shared& shared,
                                                         std::string_view route, std::int64_t now_unix_ms);

} // namespace idemgate::store::detail
