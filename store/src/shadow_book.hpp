// SPDX-License-Identifier: Apache-2.0
#pragma once
// The shadow report kept in process (the memory and map stores): per route, the since-start
// totals and a ring of the last 24 h's buckets. Thread-safe. Private to the store library.
#include <array>
#include <cstdint>
#include <idemgate/store/store.hpp>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace idemgate::store::detail {

class shadow_book {
public:
    // Adds both (and sets them to 0: an in-process add never fails).
    void add(std::string_view route, shadow_counts& since_start, shadow_counts& window,
             std::int64_t now_unix_ms);
    // The totals and the sum of the last `buckets` buckets (clamped to 1..shadow_buckets_kept).
    shadow_totals read(std::string_view route, std::int64_t now_unix_ms, std::int64_t buckets) const;

private:
    struct bucket {
        std::int64_t index = -1; // now_unix_ms / shadow_bucket; -1 = never used
        shadow_counts counts{};
    };
    struct entry {
        shadow_counts since_start{};
        std::array<bucket, shadow_buckets_kept> ring{};
    };
    mutable std::mutex mutex_;
    std::map<std::string, entry, std::less<>> routes_;
};

} // namespace idemgate::store::detail
