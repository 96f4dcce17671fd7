// SPDX-License-Identifier: Apache-2.0
#pragma once
// The time series of a timed phase: one row per --interval (answers, req/s, latency percentiles,
// status classes, errors, replays checked and mismatched, upstream executions so far), written
// as it is made to --series FILE (NDJSON or CSV) and embedded in the --json summary.
#include <array>
#include <boost/json/object.hpp>
#include <cstdint>
#include <fstream>
#include <idemgate/loadtest/log_histogram.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace idemgate::loadtest {

struct series_row {
    double t_s = 0;        // seconds from the phase's start to the row's end
    double interval_s = 0; // the row's length (the last row may be shorter)
    std::uint64_t answers = 0;
    double rps = 0;
    std::uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
    std::array<std::uint64_t, 6> status_class{}; // [2] 2xx ... [5] 5xx; [0], [1] 1xx and others
    std::uint64_t errors = 0;                    // requests without an answer
    std::uint64_t replays_checked = 0, mismatches = 0;
    std::optional<double> executions; // upstream executions since the run's start (--metrics)
};

// What the connections of one thread saw since the last row; the monitor takes it each interval.
class interval_window {
public:
    void answer(std::uint64_t latency_ns, unsigned status);
    void error();
    // Adds what was seen into `latency`, `status_class` and `errors`, and starts afresh.
    void drain(log_histogram& latency, std::array<std::uint64_t, 6>& status_class, std::uint64_t& errors);

private:
    std::mutex mutex_;
    log_histogram latency_;
    std::array<std::uint64_t, 6> status_class_{};
    std::uint64_t errors_ = 0;
};

enum class series_format { ndjson, csv };

// "FILE.ndjson"/".json" or ".csv"; nullopt for any other name.
std::optional<series_format> series_format_of(const std::string& path);

boost::json::object series_row_json(const series_row& row);
std::string series_csv_header();
std::string series_csv_line(const series_row& row);

// Where the rows go: kept for the summary and, with --series, appended to the file as made.
class series_sink {
public:
    // Opens `path` (truncating it); `error` set and false when it cannot be written.
    bool open(const std::string& path, series_format format, std::string& error);
    void add(const series_row& row);
    const std::vector<series_row>& rows() const noexcept { return rows_; }
    bool write_failed() const noexcept { return failed_; }

private:
    std::vector<series_row> rows_;
    std::unique_ptr<std::ofstream> file_;
    series_format format_ = series_format::ndjson;
    bool failed_ = false;
};

} // namespace idemgate::loadtest
