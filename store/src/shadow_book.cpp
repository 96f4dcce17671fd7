// SPDX-License-Identifier: Apache-2.0
#include "shadow_book.hpp"

#include <algorithm>
#include <chrono>

namespace idemgate::store::detail {

namespace {

std::int64_t bucket_of(std::int64_t now_unix_ms) noexcept
{
    return now_unix_ms / std::chrono::duration_cast<std::chrono::milliseconds>(shadow_bucket).count();
}

} // namespace

void shadow_book::add(std::string_view route, shadow_counts& since_start, shadow_counts& window,
                      std::int64_t now_unix_ms)
{
    const auto index = bucket_of(now_unix_ms);
    std::lock_guard lock(mutex_);
    auto it = routes_.find(route);
    if (it == routes_.end())
        it = routes_.emplace(std::string(route), entry{}).first;
    auto& slot = it->second.ring[static_cast<std::size_t>(index % shadow_buckets_kept)];
    if (slot.index != index)
        slot = bucket{index, {}};
    for (std::size_t f = 0; f < shadow_figure_count; ++f) {
        it->second.since_start[f] += since_start[f];
        slot.counts[f] += window[f];
        since_start[f] = 0;
        window[f] = 0;
    }
}

shadow_totals shadow_book::read(std::string_view route, std::int64_t now_unix_ms, std::int64_t buckets) const
{
    shadow_totals out;
    const auto index = bucket_of(now_unix_ms);
    const auto window = std::clamp<std::int64_t>(buckets, 1, shadow_buckets_kept);
    std::lock_guard lock(mutex_);
    auto it = routes_.find(route);
    if (it == routes_.end())
        return out;
    out.since_start = it->second.since_start;
    for (const auto& slot : it->second.ring)
        if (slot.index > index - window && slot.index <= index)
            for (std::size_t f = 0; f < shadow_figure_count; ++f)
                out.window[f] += slot.counts[f];
    return out;
}

} // namespace idemgate::store::detail
