// SPDX-License-Identifier: Apache-2.0
#pragma once
// A log-bucketed latency histogram in the manner of HdrHistogram: 128 linear sub-buckets per
// power of two (relative error below 0.8 %), nanoseconds up to 2^40 (about 18 minutes; longer
// values count as that). A fixed 35 KB, so a run of any length records every request without a
// per-request vector. Not synchronised: one per thread, merged at the end.
#include <array>
#include <cstdint>

namespace idemgate::loadtest {

class log_histogram {
public:
    void record(std::uint64_t ns) noexcept;
    void merge(const log_histogram& other) noexcept;

    std::uint64_t count() const noexcept { return count_; }
    std::uint64_t min() const noexcept { return count_ ? min_ : 0; }
    std::uint64_t max() const noexcept { return max_; }
    double mean() const noexcept
    {
        return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0;
    }
    // The smallest bucket bound at or below which `percent` % of the values lie (capped at
    // max()); 0 when empty.
    std::uint64_t percentile(double percent) const noexcept;
    // The values counted in `bucket` (for drawing the distribution).
    std::uint64_t count_at(std::size_t bucket) const noexcept { return counts_[bucket]; }

    // Bucket arithmetic, public for the tests.
    static std::size_t bucket_of(std::uint64_t ns) noexcept;
    static std::uint64_t upper_bound_of(std::size_t bucket) noexcept;

    static constexpr int sub_bucket_bits = 7;
    static constexpr int max_value_bits = 40;
    static constexpr std::size_t bucket_count = std::size_t(max_value_bits - sub_bucket_bits + 1)
                                                << sub_bucket_bits;

private:
    std::array<std::uint64_t, bucket_count> counts_{};
    std::uint64_t count_ = 0;
    std::uint64_t sum_ = 0;
    std::uint64_t min_ = UINT64_MAX;
    std::uint64_t max_ = 0;
};

} // namespace idemgate::loadtest
