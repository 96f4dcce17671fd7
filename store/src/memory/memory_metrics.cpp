// SPDX-License-Identifier: Apache-2.0
#include "memory/memory_backend.hpp"

#include <idemgate/common/prometheus.hpp>

namespace idemgate::store::detail {

void render_memory_metrics(const memory_stats& s, std::string& out)
{
    prometheus::header(out, "idemgate_memory_store_entries", "gauge",
                       "Keys held by the memory store (live, or expired and not yet reclaimed).");
    prometheus::sample(out, "idemgate_memory_store_entries", "", static_cast<double>(s.entries));
    prometheus::header(out, "idemgate_memory_store_bytes", "gauge",
                       "Bytes charged against store.memory.max_bytes.");
    prometheus::sample(out, "idemgate_memory_store_bytes", "", static_cast<double>(s.bytes));
    prometheus::header(out, "idemgate_memory_store_reclaimed_total", "counter", "Expired entries removed.");
    prometheus::sample(out, "idemgate_memory_store_reclaimed_total", "", static_cast<double>(s.reclaimed));
    prometheus::header(out, "idemgate_memory_store_refused_total", "counter",
                       "New keys refused because the store was full (answered per store.on_failure).");
    prometheus::sample(out, "idemgate_memory_store_refused_total", "", static_cast<double>(s.refused_full));
}

} // namespace idemgate::store::detail
