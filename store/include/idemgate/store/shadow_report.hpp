// SPDX-License-Identifier: Apache-2.0
#pragma once
// The shadow report's part of the store interface (store.hpp): its figures and the capability a
// backend offers it through (session::shadows).
#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/describe/enum.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <idemgate/common/enum_count.hpp>
#include <string_view>

namespace idemgate::store {

// What a shadow route (routes[].idempotency.mode: shadow) measures, one count each: keyed
// requests; duplicates the upstream executed again (the key and fingerprint had a finished
// record, or a held one) and those whose answer differed from the recorded one (status, or body);
// the key reused with another fingerprint; a duplicate while the first was still in flight; a key
// retried after its record expired (its tombstone found: routes with tombstone_ttl only).
BOOST_DEFINE_ENUM_CLASS(shadow_figure, keyed, duplicates_executed, duplicates_differing, reuse, concurrent,
                        after_ttl);
inline constexpr std::size_t shadow_figure_count = enum_count<shadow_figure>;
using shadow_counts = std::array<std::uint64_t, shadow_figure_count>;
// The report's sliding window: the last n buckets of shadow_bucket each, the current one
// included (a window of n minutes spans between n - 1 and n minutes). The store keeps
// shadow_buckets_kept of them, the longest window (24 h: config::shadow_window_longest). A
// route's since-start totals are forgotten shadow_keep after its last count.
inline constexpr std::chrono::seconds shadow_bucket{60};
inline constexpr std::int64_t shadow_buckets_kept = 24 * 60;
inline constexpr std::chrono::seconds shadow_keep{7 * 24 * 3600};

// A shadow route's figures as the store holds them (shadow_tally::read_shadow_counts).
struct shadow_totals {
    boost::system::error_code ec;
    shadow_counts since_start{};
    shadow_counts window{};
};

// The shadow report (routes[].idempotency.mode: shadow): figures every gateway on the store adds
// to, so the report is store-wide. A route is named by its path_prefix.
class shadow_tally {
public:
    // Adds `since_start` to the route's totals and `window` to its bucket of now_unix_ms. Each
    // count added is set to 0: what is left was not added (the error says why) and may be sent
    // again.
    virtual boost::asio::awaitable<boost::system::error_code> add_shadow_counts(std::string_view route,
                                                                                shadow_counts& since_start,
                                                                                shadow_counts& window,
                                                                                std::int64_t now_unix_ms) = 0;
    // The route's totals and the sum of the last `buckets` buckets at now_unix_ms (its window:
    // 1 to shadow_buckets_kept; outside, the nearest).
    virtual boost::asio::awaitable<shadow_totals>
    read_shadow_counts(std::string_view route, std::int64_t now_unix_ms, std::int64_t buckets) = 0;

protected:
    ~shadow_tally() = default;
};

} // namespace idemgate::store
