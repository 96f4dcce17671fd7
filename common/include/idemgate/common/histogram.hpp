// SPDX-License-Identifier: Apache-2.0
#pragma once
// A fixed-bucket latency histogram in seconds, lock-free, rendered as Prometheus text. Shared by
// the gateway's request/store metrics and the Redis store's command latency.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace idemgate {

class latency_histogram {
public:
    // Upper bounds in seconds; the last bucket is +Inf. Up to 60 s: timeouts.upstream_response
    // defaults to 25 s, and a slow upstream must land in a bucket of its own.
    static constexpr std::array<double, 17> bounds{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                   0.01,   0.025,   0.05,   0.1,   0.25,   1.0,
                                                   2.5,    5.0,     10.0,   25.0,  60.0};

    void observe(std::chrono::nanoseconds d) noexcept;
    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

    // Appends <name>_bucket{labels,le=...}, <name>_sum{labels} and <name>_count{labels}.
    void render(std::string& out, std::string_view name, std::string_view labels) const;

private:
    std::array<std::atomic<std::uint64_t>, bounds.size() + 1> buckets_{};
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> sum_ns_{0};
};

} // namespace idemgate
