// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs a load test: probe, metrics before, warm-up (replay, mixed), the timed phase (closed or
// open loop) over one io_context per thread, metrics after, and the verdict.
#include <array>
#include <cstdint>
#include <idemgate/loadtest/answer_check.hpp>
#include <idemgate/loadtest/gateway_metrics.hpp>
#include <idemgate/loadtest/log_histogram.hpp>
#include <idemgate/loadtest/options.hpp>
#include <idemgate/loadtest/series.hpp>
#include <idemgate/loadtest/threshold.hpp>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace idemgate::loadtest {

// What one phase (warm-up or timed) saw; one per thread, merged.
struct phase_stats {
    log_histogram latency;                                      // ns; open loop: from the intended send time
    std::array<std::uint64_t, 600> status{};                    // answers by status code
    std::map<std::string, std::uint64_t, std::less<>> problems; // the gateway's own answers by slug
    std::uint64_t answers = 0;
    std::vector<std::uint64_t> target_answers; // by --target, in order
    std::uint64_t connect_errors = 0, write_errors = 0, read_errors = 0, timeouts = 0;
    std::uint64_t in_flight_retries = 0; // storm: 409 request-in-flight answers asked again
    std::uint64_t gave_up = 0;           // storm: copies still 409 after --timeout
    std::uint64_t late_sends = 0;        // open loop: requests sent after their intended time
    std::uint64_t unexpected = 0;        // answers whose status is not in options::expected_statuses
    std::uint64_t bytes_sent = 0, bytes_received = 0;
    std::string first_unexpected; // the first unexpected answer: status, problem, body excerpt
    std::string unexpected_hint;  // what to change, for the first unexpected answer
    std::string first_error;      // the first request without an answer: what happened, in words
    bool stopped_early = false;   // the phase stopped because nearly every answer was unexpected
    double seconds = 0;

    std::uint64_t errors() const noexcept { return connect_errors + write_errors + read_errors + timeouts; }
    std::uint64_t conflicts_409() const noexcept { return status[409]; }
    void merge(const phase_stats& other);
};

struct run_result {
    options opts;
    std::string key_prefix;
    bool warmed_up = false;
    phase_stats warmup;
    phase_stats timed;
    check_totals checks;
    std::optional<gateway_counters> metrics_before, metrics_after;
    std::uint64_t expected_executions = 0; // distinct keys whose first answer here was an execution
    std::vector<series_row> series;        // the timed phase, one row per --interval
    std::vector<threshold_outcome> threshold_results; // each --threshold, judged
    std::vector<std::string> failures;                // one line per failed check
    bool ok() const noexcept { return failures.empty(); }
};

// The target or the metrics endpoint cannot be used at all (exit status 2).
class run_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Fills r.failures from the run's stats and checks.
void judge(run_result& r);

// `progress`: where to draw the live progress line (a terminal), or nullptr.
run_result run(const options& opts, std::ostream* progress);

} // namespace idemgate::loadtest
