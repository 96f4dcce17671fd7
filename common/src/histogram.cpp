// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <idemgate/common/histogram.hpp>
#include <idemgate/common/prometheus.hpp>

namespace idemgate {

namespace {

std::uint64_t big_endian(const std::uint8_t* bytes) noexcept
{
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
        v = v << 8 | bytes[i];
    return v;
}

} // namespace

void latency_histogram::observe(std::chrono::nanoseconds d, const trace_id* trace) noexcept
{
    double s = std::chrono::duration<double>(d).count();
    std::size_t i = 0;
    while (i < bounds.size() && s > bounds[i])
        ++i;
    const auto ns = static_cast<std::uint64_t>(d.count() < 0 ? 0 : d.count());
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(ns, std::memory_order_relaxed);
    if (!trace)
        return;
    // One writer at a time: the one that turns the sequence odd; another one at that moment
    // leaves the slot to it rather than wait on the request path.
    auto& slot = exemplars_[i];
    auto seq = slot.sequence.load(std::memory_order_relaxed);
    if ((seq & 1) != 0 || !slot.sequence.compare_exchange_strong(seq, seq + 1, std::memory_order_acquire,
                                                                 std::memory_order_relaxed))
        return;
    std::atomic_thread_fence(std::memory_order_release);
    const auto unix_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
    slot.trace_high.store(big_endian(trace->data()), std::memory_order_relaxed);
    slot.trace_low.store(big_endian(trace->data() + 8), std::memory_order_relaxed);
    slot.value_ns.store(ns, std::memory_order_relaxed);
    slot.unix_ms.store(static_cast<std::uint64_t>(unix_ms), std::memory_order_relaxed);
    slot.sequence.store(seq + 2, std::memory_order_release);
}

bool latency_histogram::read_exemplar(std::size_t bucket, exemplar& out) const noexcept
{
    const auto& slot = exemplars_[bucket];
    for (int attempt = 0; attempt < 4; ++attempt) {
        auto before = slot.sequence.load(std::memory_order_acquire);
        if (before == 0)
            return false;
        if ((before & 1) != 0)
            continue;
        out = {slot.trace_high.load(std::memory_order_relaxed),
               slot.trace_low.load(std::memory_order_relaxed), slot.value_ns.load(std::memory_order_relaxed),
               slot.unix_ms.load(std::memory_order_relaxed)};
        std::atomic_thread_fence(std::memory_order_acquire);
        if (slot.sequence.load(std::memory_order_relaxed) == before)
            return true;
    }
    return false; // written without a pause: this scrape goes without it
}

void latency_histogram::render(std::string& out, std::string_view name, std::string_view labels,
                               bool exemplars) const
{
    std::uint64_t cumulative = 0;
    std::string prefix = labels.empty() ? std::string() : std::string(labels) + ",";
    std::string bucket = std::string(name) + "_bucket";
    auto with_exemplar = [&](std::size_t i) {
        exemplar e{};
        if (!exemplars || !read_exemplar(i, e))
            return;
        out.pop_back(); // the sample's newline
        char text[128];
        std::snprintf(text, sizeof text, " # {trace_id=\"%016llx%016llx\"} %.9g %llu.%03llu\n",
                      static_cast<unsigned long long>(e.trace_high),
                      static_cast<unsigned long long>(e.trace_low), static_cast<double>(e.value_ns) / 1e9,
                      static_cast<unsigned long long>(e.unix_ms / 1000),
                      static_cast<unsigned long long>(e.unix_ms % 1000));
        out.append(text);
    };
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        cumulative += buckets_[i].load(std::memory_order_relaxed);
        char le[32];
        std::snprintf(le, sizeof le, "%g", bounds[i]);
        prometheus::sample(out, bucket, prefix + "le=\"" + le + "\"", static_cast<double>(cumulative));
        with_exemplar(i);
    }
    cumulative += buckets_[bounds.size()].load(std::memory_order_relaxed);
    prometheus::sample(out, bucket, prefix + "le=\"+Inf\"", static_cast<double>(cumulative));
    with_exemplar(bounds.size());
    prometheus::sample(out, std::string(name) + "_sum", labels, static_cast<double>(sum_ns_.load()) / 1e9);
    // The +Inf bucket's count, not count_ read apart: a scrape racing observations stays
    // consistent (OpenMetrics requires _count to equal the +Inf bucket).
    prometheus::sample(out, std::string(name) + "_count", labels, static_cast<double>(cumulative));
}

} // namespace idemgate
