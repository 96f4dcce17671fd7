// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store's shadow report (store::shadow_tally): per route, one hash of since-start
// totals and one hash per minute's bucket, kept for the longest window (redis_keys.hpp names them),
// each field a figure. Every key of a route carries its hash tag, so the read's script, which
// takes them all, works the same in Cluster mode. Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <idemgate/store/store.hpp>

namespace idemgate::store::detail {

// HINCRBY per figure into the totals (then PEXPIRE shadow_keep) and into the bucket of
// now_unix_ms (then PEXPIRE: the longest window and one bucket more). Each count added is set to 0.
boost::asio::awaitable<boost::system::error_code>
add_shadow_counts(command_router& router, redis_shared& shared, std::string_view route,
                  shadow_counts& since_start, shadow_counts& window, std::int64_t now_unix_ms);

// Which buckets a read sums: the last `buckets` (1 to shadow_buckets_kept) at now_unix_ms.
struct shadow_window_at {
    std::int64_t now_unix_ms = 0;
    std::int64_t buckets = 1;
};

// The totals and the window's sums in one round trip: a script (EVALSHA, EVAL after NOSCRIPT)
// that reads each hash with HGETALL (off the request path).
boost::asio::awaitable<shadow_totals> read_shadow_counts(command_router& router, redis_shared& shared,
                                                         std::string_view route, shadow_window_at at);

} // namespace idemgate::store::detail
