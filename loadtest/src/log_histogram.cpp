// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <bit>
#include <cmath>
#include <idemgate/loadtest/log_histogram.hpp>

namespace idemgate::loadtest {

namespace {
constexpr std::uint64_t sub_buckets = std::uint64_t(1) << log_histogram::sub_bucket_bits;
constexpr std::uint64_t largest = (std::uint64_t(1) << log_histogram::max_value_bits) - 1;
} // namespace

// Values below 128 ns get a bucket each; above, the top 8 significant bits pick the bucket:
// group g (g >= 1) holds [2^(g+6), 2^(g+7)) in 128 equal steps.
std::size_t log_histogram::bucket_of(std::uint64_t ns) noexcept
{
    ns = std::min(ns, largest);
    if (ns < sub_buckets)
        return static_cast<std::size_t>(ns);
    int msb = std::bit_width(ns) - 1; // >= sub_bucket_bits
    int shift = msb - sub_bucket_bits;
    std::uint64_t sub = ns >> shift; // in [128, 256)
    return static_cast<std::size_t>((std::uint64_t(shift + 1) << sub_bucket_bits) + (sub - sub_buckets));
}

std::uint64_t log_histogram::upper_bound_of(std::size_t bucket) noexcept
{
    std::uint64_t group = bucket >> sub_bucket_bits;
    if (group == 0)
        return bucket;
    int shift = static_cast<int>(group) - 1;
    std::uint64_t sub = (bucket & (sub_buckets - 1)) + sub_buckets;
    return ((sub + 1) << shift) - 1;
}

void log_histogram::record(std::uint64_t ns) noexcept
{
    ++counts_[bucket_of(ns)];
    ++count_;
    sum_ += ns;
    min_ = std::min(min_, ns);
    max_ = std::max(max_, ns);
}

void log_histogram::merge(const log_histogram& other) noexcept
{
    for (std::size_t i = 0; i < bucket_count; ++i)
        counts_[i] += other.counts_[i];
    count_ += other.count_;
    sum_ += other.sum_;
    min_ = std::min(min_, other.min_);
    max_ = std::max(max_, other.max_);
}

std::uint64_t log_histogram::percentile(double percent) const noexcept
{
    if (count_ == 0)
        return 0;
    percent = std::clamp(percent, 0.0, 100.0);
    auto rank = static_cast<std::uint64_t>(std::ceil(percent / 100.0 * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < bucket_count; ++i) {
        seen += counts_[i];
        if (seen >= rank)
            return std::min(std::max(upper_bound_of(i), min_), max_);
    }
    return max_;
}

} // namespace idemgate::loadtest
