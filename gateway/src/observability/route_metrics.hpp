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
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace idemgate::gateway::detail {

// GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, and every other method as "other": a client
// cannot grow the label set.
inline constexpr std::size_t route_method_count = 8;
inline constexpr std::size_t route_code_count = 5; // 1xx..5xx (a status outside 100-599: 5xx)

struct route_counters {
    std::array<std::atomic<std::uint64_t>, route_method_count * route_code_count> requests{};
    latency_histogram duration; // handled requests, header to answer sent (as request_duration)
    void count(boost::beast::http::verb method, unsigned status) noexcept;
};

// The process's route_counters by route label (the map only grows; lookups when a generation is
// made). The label "" stands for requests no route matched (rendered as route="none").
class route_registry {
public:
    route_counters& counters(const std::string& route);
    // `exemplars`: the latency buckets' exemplars too (OpenMetrics).
    void render(std::string& out, bool exemplars = false) const;

private:
    mutable std::mutex mutex_;
    std::map<std::string, std::unique_ptr<route_counters>> counters_;
};

} // namespace idemgate::gateway::detail
