// SPDX-License-Identifier: Apache-2.0
#pragma once
// The HTML report's charts, each one <svg> drawn from the series or the latency histogram.
#include <idemgate/loadtest/log_histogram.hpp>
#include <idemgate/loadtest/series.hpp>
#include <string>
#include <vector>

namespace idemgate::loadtest::detail {

std::string throughput_chart(const std::vector<series_row>& rows); // req/s per interval
std::string latency_chart(const std::vector<series_row>& rows);    // p50, p99, max per interval
std::string distribution_chart(const log_histogram& latency);      // answers per log bucket
std::string percentile_chart(const log_histogram& latency);        // latency by percentile
std::string status_chart(const std::vector<series_row>& rows);     // statuses per second, stacked

} // namespace idemgate::loadtest::detail
