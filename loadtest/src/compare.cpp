// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <idemgate/loadtest/compare.hpp>
#include <iomanip>
#include <set>
#include <sstream>

namespace idemgate::loadtest {

namespace {

// A summary figure and the series column that follows it interval by interval.
constexpr std::pair<std::string_view, std::string_view> judged_by_series[] = {
    {"rps", "rps"}, {"latency_us.p50", "p50_us"}, {"latency_us.p99", "p99_us"}, {"latency_us.max", "max_us"}};

// Columns of a row that are not per-interval figures: when the row ends, its length, and the
// upstream executions since the run's start (a running total).
bool per_interval(std::string_view column)
{
    return column != "t_s" && column != "interval_s" && column != "executions";
}

std::string fixed(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

// A figure as written when it is an integer (every digit kept), else rounded for reading.
std::string shown(const summary_figure& f)
{
    if (f.text.find_first_of(".eE") == std::string::npos || !std::isfinite(f.value))
        return f.text;
    return fixed(f.value, std::fabs(f.value) >= 100 ? 1 : 3);
}

std::string shown(double v)
{
    if (v == std::floor(v) && std::fabs(v) < 1e15)
        return fixed(v, 0);
    return fixed(v, std::fabs(v) >= 100 ? 1 : 3);
}

std::string ratio(double a, double b)
{
    if (a == 0 || !std::isfinite(a) || !std::isfinite(b))
        return a == b ? "=" : "n/a";
    double r = b / a;
    return fixed(r, std::fabs(r) >= 100 ? 0 : 3);
}

double quantile(const std::vector<double>& sorted, double q)
{
    double pos = q * static_cast<double>(sorted.size() - 1);
    auto i = static_cast<std::size_t>(std::floor(pos));
    double frac = pos - static_cast<double>(i);
    if (i + 1 >= sorted.size())
        return sorted.back();
    return sorted[i] + (sorted[i + 1] - sorted[i]) * frac;
}

const std::vector<double>* column_of(const run_summary& s, std::string_view column)
{
    auto it = s.series.find(std::string(column));
    return it == s.series.end() || it->second.empty() ? nullptr : &it->second;
}

// "changed" or "within spread" for a series column both runs have; "" otherwise.
std::string mark(const run_summary& a, const run_summary& b, std::string_view column)
{
    const auto* va = column_of(a, column);
    const auto* vb = column_of(b, column);
    if (!va || !vb)
        return "";
    return changed(spread_of(*va), spread_of(*vb)) ? "changed" : "within spread";
}

std::string describe(const std::string& name, const run_summary& s)
{
    auto text = [&](const char* key) {
        auto it = s.texts.find(key);
        return it == s.texts.end() ? std::string("?") : it->second;
    };
    std::string answers = "?", seconds = "?";
    for (const auto& f : s.figures) {
        if (f.path == "answers")
            answers = f.text;
        if (f.path == "seconds")
            seconds = fixed(f.value, 2);
    }
    return name + ": " + text("url") + ", " + text("mode") + ", " + text("loop") + " loop, " + answers +
           " answers in " + seconds + " s, " + (text("ok") == "true" ? "PASS" : "FAIL") + ", " +
           std::to_string(s.series_rows) + " intervals";
}

} // namespace

spread spread_of(std::vector<double> values)
{
    if (values.empty())
        return {};
    std::sort(values.begin(), values.end());
    return {quantile(values, 0.5), quantile(values, 0.75) - quantile(values, 0.25)};
}

bool changed(const spread& a, const spread& b)
{
    return std::fabs(b.median - a.median) > std::max(a.iqr, b.iqr);
}

void write_comparison(std::ostream& out, const std::string& name_a, const run_summary& a,
                      const std::string& name_b, const run_summary& b)
{
    out << "A  " << describe(name_a, a) << "\n";
    out << "B  " << describe(name_b, b) << "\n\n";
    // Every figure of either summary, in A's order, then those only B has.
    std::vector<std::string> paths;
    std::set<std::string> seen;
    std::map<std::string, const summary_figure*> in_a, in_b;
    for (const auto& f : a.figures) {
        in_a[f.path] = &f;
        if (seen.insert(f.path).second)
            paths.push_back(f.path);
    }
    for (const auto& f : b.figures) {
        in_b[f.path] = &f;
        if (seen.insert(f.path).second)
            paths.push_back(f.path);
    }
    std::size_t width = 28;
    for (const auto& p : paths)
        width = std::max(width, p.size() + 2);
    auto line = [&](const std::string& name, const std::string& va, const std::string& vb,
                    const std::string& r, const std::string& note) {
        out << std::left << std::setw(static_cast<int>(width)) << name << std::right << std::setw(20) << va
            << std::setw(20) << vb << std::setw(10) << r;
        if (!note.empty())
            out << "  " << note;
        out << "\n";
    };
    line("figure", "A", "B", "B/A", "beyond the runs' spread?");
    for (const auto& p : paths) {
        const auto* fa = in_a.count(p) ? in_a[p] : nullptr;
        const auto* fb = in_b.count(p) ? in_b[p] : nullptr;
        std::string note;
        for (const auto& [figure, column] : judged_by_series)
            if (figure == p)
                note = mark(a, b, column);
        line(p, fa ? shown(*fa) : "-", fb ? shown(*fb) : "-", fa && fb ? ratio(fa->value, fb->value) : "",
             note);
    }
    out << "\nper interval: median (interquartile range); changed when the medians differ by more than\n"
           "the larger of the two ranges\n";
    line("series column", "A", "B", "B/A", "");
    std::vector<std::string> columns = a.series_columns;
    for (const auto& c : b.series_columns)
        if (std::find(columns.begin(), columns.end(), c) == columns.end())
            columns.push_back(c);
    for (const auto& c : columns) {
        if (!per_interval(c))
            continue;
        const auto* va = column_of(a, c);
        const auto* vb = column_of(b, c);
        auto cell = [](const std::vector<double>* v) {
            if (!v)
                return std::string("-");
            auto s = spread_of(*v);
            return shown(s.median) + " (" + shown(s.iqr) + ")";
        };
        line(c, cell(va), cell(vb), va && vb ? ratio(spread_of(*va).median, spread_of(*vb).median) : "",
             mark(a, b, c));
    }
    if (a.series_rows == 0 || b.series_rows == 0)
        out << "(a summary without a series: no figure can be judged against its spread)\n";
}

int compare_command(const std::vector<std::string>& args, std::ostream& out, std::ostream& err)
{
    if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h")) {
        out << "usage: idemgate-loadtest compare A.json B.json\n";
        return 0;
    }
    if (args.size() != 2) {
        err << "idemgate-loadtest compare: two --json summaries are needed: idemgate-loadtest compare "
               "A.json B.json\n";
        return 2;
    }
    std::vector<run_summary> summaries;
    for (const auto& path : args) {
        std::error_code ec;
        bool directory = std::filesystem::is_directory(path, ec);
        std::ifstream file(path, std::ios::binary);
        std::ostringstream text;
        if (file && !directory)
            text << file.rdbuf();
        if (!file || file.bad() || directory) {
            err << "idemgate-loadtest compare: cannot read \"" << path << "\""
                << (directory ? " (a directory)" : "") << "\n";
            return 2;
        }
        std::string error;
        auto s = read_summary(text.str(), error);
        if (!s) {
            err << "idemgate-loadtest compare: \"" << path << "\" " << error << "\n";
            return 2;
        }
        summaries.push_back(std::move(*s));
    }
    write_comparison(out, args[0], summaries[0], args[1], summaries[1]);
    return 0;
}

} // namespace idemgate::loadtest
