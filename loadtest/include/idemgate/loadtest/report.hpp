// SPDX-License-Identifier: Apache-2.0
#pragma once
// The end-of-run summary: a text report for people, one JSON object for CI (--json), and a page
// with charts (--report).
#include <boost/json/object.hpp>
#include <idemgate/loadtest/runner.hpp>
#include <idemgate/loadtest/series.hpp>
#include <ostream>
#include <string>
#include <string_view>

namespace idemgate::loadtest {

void write_text_report(std::ostream& out, const run_result& r);
boost::json::object json_report(const run_result& r);
// --report: one self-contained HTML page (inline CSS and SVG, no script, nothing fetched).
void write_html_report(std::ostream& out, const run_result& r);
// "HTTP/1.1", "h2" (TLS, ALPN) or "h2c" (prior knowledge).
std::string_view protocol_name(const options& o);
// "replay of 1000 warm keys; closed loop": the workload and the loop, in words.
std::string describe_workload(const options& o);

// What the live progress line shows, once a second.
struct progress_figures {
    double elapsed_s = 0;
    double eta_s = -1; // < 0: unknown
    std::uint64_t answers = 0;
    double per_second = 0;
    std::uint64_t unexpected = 0, errors = 0, check_failures = 0;
    const series_row* row = nullptr; // the interval just ended: latency, statuses, replays
};
// The line, starting with a carriage return and an erase-line: it redraws itself on a terminal.
std::string progress_line(std::string_view label, const progress_figures& f);

// `v` with `decimals` digits after the point ("12.30").
std::string format_fixed(double v, int decimals);

// "850µs", "12.3ms", "1.20s" for a duration in nanoseconds.
std::string format_latency(std::uint64_t ns);

} // namespace idemgate::loadtest
