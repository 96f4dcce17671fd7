// SPDX-License-Identifier: Apache-2.0
#include <cstdio>
#include <idemgate/common/histogram.hpp>
#include <idemgate/common/prometheus.hpp>

namespace idemgate {

void latency_histogram::observe(std::chrono::nanoseconds d) noexcept
{
    double s = std::chrono::duration<double>(d).count();
    std::size_t i = 0;
    while (i < bounds.size() && s > bounds[i])
        ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(d.count() < 0 ? 0 : d.count()), std::memory_order_relaxed);
}

void latency_histogram::render(std::string& out, std::string_view name, std::string_view labels) const
{
    std::uint64_t cumulative = 0;
    std::string prefix = labels.empty() ? std::string() : std::string(labels) + ",";
    std::string bucket = std::string(name) + "_bucket";
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        cumulative += buckets_[i].load(std::memory_order_relaxed);
        char le[32];
        std::snprintf(le, sizeof le, "%g", bounds[i]);
        prometheus::sample(out, bucket, prefix + "le=\"" + le + "\"", static_cast<double>(cumulative));
    }
    cumulative += buckets_[bounds.size()].load(std::memory_order_relaxed);
    prometheus::sample(out, bucket, prefix + "le=\"+Inf\"", static_cast<double>(cumulative));
    prometheus::sample(out, std::string(name) + "_sum", labels, static_cast<double>(sum_ns_.load()) / 1e9);
    prometheus::sample(out, std::string(name) + "_count", labels, static_cast<double>(count_.load()));
}

} // namespace idemgate
