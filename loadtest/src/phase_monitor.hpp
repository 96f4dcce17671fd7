// SPDX-License-Identifier: Apache-2.0
#pragma once
// While a phase runs: a row of the time series every --interval (and the live line on a
// terminal), from the threads' interval windows, the checker's counts and the gateway's metrics.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <idemgate/loadtest/answer_check.hpp>
#include <idemgate/loadtest/gateway_metrics.hpp>
#include <idemgate/loadtest/options.hpp>
#include <idemgate/loadtest/series.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <string_view>
#include <vector>

namespace idemgate::loadtest::detail {

using clock_type = std::chrono::steady_clock;

struct phase_monitor {
    const options& opts;
    std::string_view label;
    std::vector<std::unique_ptr<interval_window>>& windows;
    const answer_checker& checker;
    const std::atomic<std::uint64_t>& answers;
    const std::atomic<std::uint64_t>& unexpected;
    const std::atomic<std::uint64_t>& errors;
    std::optional<clock_type::time_point> end;
    std::uint64_t limit;
    std::ostream* progress = nullptr;
    series_sink* sink = nullptr;                      // the timed phase: its rows go here
    const gateway_counters* metrics_before = nullptr; // executions so far, with --metrics

    // Until `running` is 0 (under `mutex`, signalled on `cv`).
    void watch(std::mutex& mutex, std::condition_variable& cv, const unsigned& running,
               clock_type::time_point started);
};

} // namespace idemgate::loadtest::detail
