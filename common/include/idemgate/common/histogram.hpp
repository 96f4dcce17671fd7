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
    using trace_id = std::array<std::uint8_t, 16>; // W3C Trace Context's 16 bytes

    void observe(std::chrono::nanoseconds d) noexcept { observe(d, nullptr); }
    // With a trace: it becomes the exemplar of the bucket the observation falls in (the last
    // one wins; an observation racing another one's write of the same bucket keeps no exemplar).
    void observe(std::chrono::nanoseconds d, const trace_id* trace) noexcept;
    std::uint64_t count() const noexcept { return count_.load(std::memory_order_relaxed); }

    // Appends <name>_bucket{labels,le=...}, <name>_sum{labels} and <name>_count{labels}; with
    // `exemplars` (OpenMetrics only) each bucket's exemplar after its sample:
    // ` # {trace_id="..."} <seconds> <unix time>`.
    void render(std::string& out, std::string_view name, std::string_view labels,
                bool exemplars = false) const;

private:
    // A seqlock: odd while a writer fills it; 0 never written. Every field is an atomic so that a
    // reader racing a writer reads stale values, never undefined ones, and then retries.
    struct exemplar_slot {
        std::atomic<std::uint32_t> sequence{0};
        std::atomic<std::uint64_t> trace_high{0};
        std::atomic<std::uint64_t> trace_low{0};
        std::atomic<std::uint64_t> value_ns{0};
        std::atomic<std::uint64_t> unix_ms{0};
    };
    struct exemplar {
        std::uint64_t trace_high, trace_low, value_ns, unix_ms;
    };
    bool read_exemplar(std::size_t bucket, exemplar& out) const noexcept;

    std::array<std::atomic<std::uint64_t>, bounds.size() + 1> buckets_{};
    std::atomic<std::uint64_t> count_{0};
    std::atomic<std::uint64_t> sum_ns_{0};
    std::array<exemplar_slot, bounds.size() + 1> exemplars_{};
};

} // namespace idemgate
