// SPDX-License-Identifier: Apache-2.0
#include "report_charts.hpp"

#include "svg_chart.hpp"

#include <algorithm>
#include <cmath>
#include <idemgate/loadtest/report.hpp>
#include <map>

namespace idemgate::loadtest::detail {

namespace {

std::string empty_chart(std::string_view why)
{
    return "<p><em>" + html_escape(why) + "</em></p>\n";
}

std::string latency_label(double ns)
{
    return format_latency(static_cast<std::uint64_t>(std::llround(ns)));
}

std::string plain_label(double v)
{
    if (v >= 10000)
        return format_fixed(v / 1000, 0) + "k";
    if (v >= 1000)
        return format_fixed(v / 1000, 1) + "k";
    return format_fixed(v, v == std::floor(v) ? 0 : 1);
}

chart_axis time_axis(const std::vector<series_row>& rows)
{
    return {0, std::max(rows.back().t_s, 1e-3), false, [](double s) { return plain_label(s) + "s"; },
            "seconds from the start of the timed phase"};
}

// A value per interval drawn as a step: flat over the interval it covers. `value` returns a
// negative number for "nothing here", which breaks the line.
template<class Value>
std::string steps(const svg_chart& c, const std::vector<series_row>& rows, Value value)
{
    std::string d;
    double last_x = -1;
    bool open = false;
    for (const auto& r : rows) {
        double v = value(r);
        double x0 = c.px(r.t_s - r.interval_s), x1 = c.px(r.t_s);
        if (v < 0) {
            open = false;
            continue;
        }
        if (open && std::fabs(x0 - last_x) < 0.05)
            put(d, 'V', c.py(v));
        else
            put(d, 'M', x0, c.py(v));
        put(d, 'H', x1);
        last_x = x1;
        open = true;
    }
    return d;
}

// The area between two step lines (lower, upper), forward along the top and back along the bottom.
template<class Lower, class Upper>
std::string band(const svg_chart& c, const std::vector<series_row>& rows, Lower lower, Upper upper)
{
    std::string top;
    std::vector<std::string> bottom; // each row's bottom edge, drawn back from the last
    for (const auto& r : rows) {
        double x0 = c.px(r.t_s - r.interval_s), x1 = c.px(r.t_s);
        put(top, top.empty() ? 'M' : 'L', x0, c.py(upper(r)));
        put(top, 'L', x1, c.py(upper(r)));
        std::string back;
        put(back, 'L', x1, c.py(lower(r)));
        put(back, 'L', x0, c.py(lower(r)));
        bottom.push_back(std::move(back));
    }
    if (top.empty())
        return top;
    for (auto it = bottom.rbegin(); it != bottom.rend(); ++it)
        top += *it;
    top += 'Z';
    return top;
}

double per_second(const series_row& r, std::uint64_t n)
{
    return r.interval_s > 0 ? static_cast<double>(n) / r.interval_s : 0;
}

} // namespace

std::string throughput_chart(const std::vector<series_row>& rows)
{
    if (rows.empty())
        return empty_chart("No interval was recorded.");
    double top = 0;
    for (const auto& r : rows)
        top = std::max(top, r.rps);
    svg_chart c("throughput", time_axis(rows),
                {0, std::max(top * 1.12, 1.0), false, plain_label, "answers / s"});
    auto rps = [](const series_row& r) { return r.rps; };
    c.add_path(band(
                   c, rows, [](const series_row&) { return 0.0; }, rps),
               "area s-fill", "");
    c.add_path(steps(c, rows, rps), "line s-rps", "req/s");
    return c.render();
}

std::string latency_chart(const std::vector<series_row>& rows)
{
    double lo = 0, hi = 0;
    for (const auto& r : rows)
        for (auto v : {r.p50_ns, r.p99_ns, r.max_ns})
            if (v > 0) {
                lo = lo == 0 ? static_cast<double>(v) : std::min(lo, static_cast<double>(v));
                hi = std::max(hi, static_cast<double>(v));
            }
    if (hi == 0)
        return empty_chart("No interval had an answer.");
    svg_chart c("latency", time_axis(rows), {lo / 1.5, hi * 1.5, true, latency_label, "latency (log)"});
    auto of = [](std::uint64_t series_row::*m) {
        return [m](const series_row& r) { return r.*m ? static_cast<double>(r.*m) : -1.0; };
    };
    c.add_path(steps(c, rows, of(&series_row::p50_ns)), "line s-p50", "p50");
    c.add_path(steps(c, rows, of(&series_row::p99_ns)), "line s-p99", "p99");
    c.add_path(steps(c, rows, of(&series_row::max_ns)), "line s-max", "max");
    return c.render();
}

std::string distribution_chart(const log_histogram& h)
{
    if (h.count() == 0)
        return empty_chart("No answer was timed.");
    // The histogram's 128 steps per power of two, gathered 4 to an octave (each bar about 19 %
    // wide) so that a bar holds enough answers to be seen; the x axis is logarithmic, as HDR's.
    constexpr double per_octave = 4;
    std::map<long, std::uint64_t> bins;
    for (std::size_t i = 0; i < log_histogram::bucket_count; ++i)
        if (auto n = h.count_at(i))
            bins[std::lround(std::floor(
                std::log2(static_cast<double>(std::max<std::uint64_t>(log_histogram::upper_bound_of(i), 1))) *
                per_octave))] += n;
    double lo = std::exp2(static_cast<double>(bins.begin()->first) / per_octave);
    double hi = std::exp2(static_cast<double>(bins.rbegin()->first + 1) / per_octave);
    std::uint64_t most = 0;
    for (const auto& [bin, n] : bins)
        most = std::max(most, n);
    double total = static_cast<double>(h.count());
    double top = static_cast<double>(most) / total * 100 * 1.12;
    svg_chart c("distribution", {lo / 1.2, hi * 1.2, true, latency_label, "latency (log buckets)"},
                {0, top, false,
                 [](double v) { return format_fixed(v, v < 10 && v != std::floor(v) ? 1 : 0) + "%"; },
                 "share of answers"});
    std::string d;
    for (const auto& [bin, n] : bins) {
        double x0 = c.px(std::exp2(static_cast<double>(bin) / per_octave));
        double x1 = c.px(std::exp2(static_cast<double>(bin + 1) / per_octave));
        put(d, 'M', x0, c.base());
        put(d, 'V', c.py(static_cast<double>(n) / total * 100));
        put(d, 'H', x1);
        put(d, 'V', c.base());
        d += 'Z';
    }
    c.add_path(d, "bars s-dist", "answers per bucket");
    c.add_marker(static_cast<double>(h.percentile(50)), "p50 " + format_latency(h.percentile(50)));
    c.add_marker(static_cast<double>(h.percentile(99)), "p99 " + format_latency(h.percentile(99)));
    return c.render();
}

std::string percentile_chart(const log_histogram& h)
{
    if (h.count() == 0)
        return empty_chart("No answer was timed.");
    // HdrHistogram's percentile plot: x is 1 / (1 - percentile) on a log scale, so 90 %, 99 %,
    // 99.9 % ... are evenly spaced; it ends where the run has too few answers to say more.
    double nines = std::max(1.0, std::floor(std::log10(static_cast<double>(h.count()))));
    double lo = static_cast<double>(std::max<std::uint64_t>(h.min(), 1));
    double hi = static_cast<double>(std::max<std::uint64_t>(h.max(), 2));
    svg_chart c("percentiles",
                {1, std::pow(10.0, nines), true,
                 [](double x) {
                     double p = 100 * (1 - 1 / x);
                     return format_fixed(
                                p, p < 99 ? 0 : static_cast<int>(std::lround(-std::log10(1 - p / 100))) - 2) +
                            "%";
                 },
                 "percentile"},
                {lo / 1.3, hi * 1.3, true, latency_label, "latency (log)"});
    std::string d;
    constexpr int steps_per_nine = 40;
    for (int i = 0; i <= static_cast<int>(nines) * steps_per_nine; ++i) {
        double x = std::pow(10.0, static_cast<double>(i) / steps_per_nine);
        double p = 100 * (1 - 1 / x);
        put(d, i ? 'L' : 'M', c.px(x), c.py(static_cast<double>(h.percentile(p))));
    }
    put(d, 'L', c.px(std::pow(10.0, nines)), c.py(hi));
    c.add_path(d, "line s-pct", "latency at percentile");
    return c.render();
}

std::string status_chart(const std::vector<series_row>& rows)
{
    if (rows.empty())
        return empty_chart("No interval was recorded.");
    // Stacked per second: 2xx at the bottom, then 3xx, 4xx, 5xx, other statuses, and requests
    // that got no answer at all on top.
    struct layer {
        const char* css;
        const char* what;
        std::uint64_t (*n)(const series_row&);
    };
    static constexpr layer layers[] = {
        {"area s-2xx", "2xx", [](const series_row& r) { return r.status_class[2]; }},
        {"area s-3xx", "3xx", [](const series_row& r) { return r.status_class[3]; }},
        {"area s-4xx", "4xx", [](const series_row& r) { return r.status_class[4]; }},
        {"area s-5xx", "5xx", [](const series_row& r) { return r.status_class[5]; }},
        {"area s-other", "other", [](const series_row& r) { return r.status_class[0] + r.status_class[1]; }},
        {"area s-err", "no answer", [](const series_row& r) { return r.errors; }},
    };
    double top = 0;
    for (const auto& r : rows) {
        std::uint64_t sum = 0;
        for (const auto& l : layers)
            sum += l.n(r);
        top = std::max(top, per_second(r, sum));
    }
    svg_chart c("status", time_axis(rows), {0, std::max(top * 1.12, 1.0), false, plain_label, "answers / s"});
    for (std::size_t k = 0; k < std::size(layers); ++k) {
        bool any =
            std::any_of(rows.begin(), rows.end(), [&](const series_row& r) { return layers[k].n(r) > 0; });
        if (!any)
            continue;
        auto below = [k](const series_row& r) {
            std::uint64_t sum = 0;
            for (std::size_t j = 0; j < k; ++j)
                sum += layers[j].n(r);
            return per_second(r, sum);
        };
        auto above = [k, below](const series_row& r) { return below(r) + per_second(r, layers[k].n(r)); };
        c.add_path(band(c, rows, below, above), layers[k].css, layers[k].what);
    }
    return c.render();
}

} // namespace idemgate::loadtest::detail
