// SPDX-License-Identifier: Apache-2.0
#pragma once
// The gateway's own count of what it did, read from its admin /metrics (Prometheus text):
// idemgate_requests_total{outcome="..."}, summed over every --metrics URL (instances of a fleet).
#include <chrono>
#include <idemgate/loadtest/options.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::loadtest {

struct gateway_counters {
    std::map<std::string, double, std::less<>> by_outcome; // executed, replayed, conflict, ...
    double outcome(std::string_view name) const;
    double total() const; // every request the gateway counted
};

// The idemgate_requests_total samples of one /metrics page; nullopt when there are none (not an
// idemgate admin endpoint).
std::optional<gateway_counters> parse_gateway_metrics(std::string_view text);

// GETs every URL (a deadline on each connect, write and read) and sums the counters. nullopt
// with `error` naming the URL when one cannot be read or parsed.
std::optional<gateway_counters> scrape_gateway_metrics(const std::vector<target_url>& urls,
                                                       std::chrono::nanoseconds timeout, std::string& error);

} // namespace idemgate::loadtest
