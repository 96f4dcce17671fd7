// SPDX-License-Identifier: Apache-2.0
#pragma once
// `idemgate-loadtest compare A.json B.json`: two --json summaries side by side, every figure with
// the ratio B/A, and a mark where the runs differ beyond their own spread: the medians of a
// figure's per-interval series differ by more than the larger of the two interquartile ranges.
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::loadtest {

// A number of a summary: its path ("latency_us.p99", "status.201", "targets[0].answers"), its
// text as written (exact, whatever its size) and its value as a double (for ratios).
struct summary_figure {
    std::string path;
    std::string text;
    double value = 0;
};

// A --json summary read back.
struct run_summary {
    std::vector<summary_figure> figures;               // every number outside "series", in order
    std::map<std::string, std::string> texts;          // strings and booleans by path ("url", "ok")
    std::vector<std::string> series_columns;           // the series' numeric columns, in order
    std::map<std::string, std::vector<double>> series; // a column's values, one per interval
    std::size_t series_rows = 0;
};

// Reads a summary from its JSON text; nullopt with `error` saying why when it is not JSON or not
// an idemgate-loadtest summary. Numbers are read from their text, so none loses digits.
std::optional<run_summary> read_summary(std::string_view json_text, std::string& error);

// The median and the interquartile range of `values` (quartiles by linear interpolation).
struct spread {
    double median = 0;
    double iqr = 0;
};
spread spread_of(std::vector<double> values);

// Whether two series differ beyond their spread: |median B - median A| > max(IQR A, IQR B).
bool changed(const spread& a, const spread& b);

// Writes the comparison of `a` and `b` (named `name_a`, `name_b`).
void write_comparison(std::ostream& out, const std::string& name_a, const run_summary& a,
                      const std::string& name_b, const run_summary& b);

// The `compare` command: args are what follows "compare". Returns the exit status: 0 once
// compared (a comparison is not a verdict), 2 for a bad command line or a file that is not a
// summary, with the message on `err`.
int compare_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

} // namespace idemgate::loadtest
