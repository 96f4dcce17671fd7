// SPDX-License-Identifier: Apache-2.0
#pragma once
// Requests by route, method and status class (idemgate_route_requests_total) and their latency
// by route (idemgate_route_request_duration_seconds). The counters of a route outlive reloads
// (keyed by its path_prefix); each configuration generation holds pointers to its routes'
// counters, so the request path counts with relaxed adds and no lookup.
#include <array>
#include <atomic>
#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <idemgate/common/histogram.hpp>
#include <idemgate/store/store.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace idemgate::gateway::detail {

// GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, and every other method as "other": a client
// cannot grow the label set.
inline constexpr std::size_t route_method_count = 8;
inline constexpr std::size_t route_code_count = 5; // 1xx..5xx (a status outside 100-599: 5xx)

struct route_counters {
    std::array<std::atomic<std::uint64_t>, route_method_count * route_code_count> requests{};
    latency_histogram duration; // handled requests, header to answer sent (as request_duration)
    void count(boost::beast::http::verb method, unsigned status) noexcept;

    // A shadow route's figures (store::shadow_figure), counted by this process
    // (idemgate_shadow_figures_total), and how many of them the store has in the route's totals
    // and in its window: the rest is sent by the next flush (idempotency/shadow_report.hpp).
    using shadow_array = std::array<std::atomic<std::uint64_t>, store::shadow_figure_count>;
    shadow_array shadow{};
    shadow_array shadow_totalled{};
    shadow_array shadow_windowed{};
    void count_shadow(store::shadow_figure f) noexcept
    {
        shadow[static_cast<std::size_t>(f)].fetch_add(1, std::memory_order_relaxed);
    }
};

// The process's route_counters by route label (the map only grows; lookups when a generation is
// made). The label "" stands for requests no route matched (rendered as route="none").
class route_registry {
public:
    route_counters& counters(const std::string& route);
    // Every route's counters, by label (they live as long as the registry).
    std::vector<std::pair<std::string, route_counters*>> all() const;
    // `exemplars`: the latency buckets' exemplars too (OpenMetrics).
    void render(std::string& out, bool exemplars = false) const;

private:
    mutable std::mutex mutex_;
    std::map<std::string, std::unique_ptr<route_counters>> counters_;
};

} // namespace idemgate::gateway::detail
