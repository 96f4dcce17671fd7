// SPDX-License-Identifier: Apache-2.0
#pragma once
// --threshold 'p99<5ms': a bound on one figure of the timed phase, judged after the run (a broken
// one fails it, as k6's thresholds do). Figures: pN (any percentile, e.g. p50, p99.9), max, mean
// (latencies with a unit: ns, us, ms, s), rps, errors (a count, or a share of requests with %),
// mismatches (replays that differed from their key's first answer).
#include <cstdint>
#include <idemgate/loadtest/log_histogram.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::loadtest {

struct threshold {
    enum class figure { percentile, max, mean, rps, errors, mismatches };
    enum class comparison { lt, le, gt, ge, eq };
    std::string text; // as given
    figure what = figure::percentile;
    double percentile = 0; // figure::percentile
    comparison op = comparison::lt;
    double bound = 0;     // latencies in ns; errors in % when `percent`
    bool percent = false; // errors<0.1%
};

// nullopt with `error` saying what is wrong when `text` is not a threshold.
std::optional<threshold> parse_threshold(std::string_view text, std::string& error);

// What the thresholds are judged on: the timed phase and the run's checks.
struct threshold_inputs {
    const log_histogram* latency = nullptr;
    std::uint64_t answers = 0;
    double seconds = 0;
    std::uint64_t errors = 0; // requests without an answer
    std::uint64_t mismatches = 0;
};

struct threshold_outcome {
    std::string text;          // the threshold as given
    double observed = 0;       // in the threshold's unit (ns, req/s, count or %)
    std::string observed_text; // "2.10ms", "0.03 %", "812 req/s"
    bool pass = false;
};

threshold_outcome evaluate(const threshold& t, const threshold_inputs& in);

} // namespace idemgate::loadtest
