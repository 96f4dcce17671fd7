// SPDX-License-Identifier: Apache-2.0
// --report FILE.html: one page that needs nothing else (inline CSS, inline SVG, no script, no
// network), so it can be attached to a ticket or a CI run and opened anywhere.
#include "report_charts.hpp"
#include "svg_chart.hpp"

#include <cmath>
#include <ctime>
#include <idemgate/loadtest/expectations.hpp>
#include <idemgate/loadtest/report.hpp>

#ifndef IDEMGATE_VERSION
#define IDEMGATE_VERSION "dev"
#endif

namespace idemgate::loadtest {

namespace {

using detail::html_escape;

constexpr std::string_view style = R"(
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:18px 24px;color:#1d2330;background:#fff}
h1{font-size:21px;margin:0 0 6px}h2{font-size:16px;margin:26px 0 8px;border-bottom:1px solid #dde1e8;padding-bottom:3px}
code,pre{font:12.5px/1.4 ui-monospace,"DejaVu Sans Mono",monospace}
pre.cmd{background:#f4f6f9;border:1px solid #dde1e8;padding:8px 10px;white-space:pre-wrap;word-break:break-all}
.verdict{display:inline-block;font-weight:700;padding:3px 12px;border-radius:4px;color:#fff;font-size:16px}
.pass{background:#1b8a4b}.fail{background:#c62828}
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:10px 22px}
table{border-collapse:collapse;margin:4px 0}td,th{padding:2px 12px 2px 0;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}th{font-weight:600;color:#4a5263}
ul.failures li{color:#c62828}
svg.chart{width:100%;height:auto;display:block}
svg .grid{stroke:#e3e6ec;stroke-width:1}svg .frame{fill:none;stroke:#9aa3b2}
svg text{font-size:11px;fill:#4a5263}svg .axis{font-size:12px;fill:#1d2330}svg .legend{font-size:11.5px;fill:#1d2330}
svg .line{fill:none;stroke:var(--c);stroke-width:1.8}svg .area{fill:var(--c);fill-opacity:.55;stroke:none}
svg .bars{fill:var(--c);stroke:#fff;stroke-width:.5}svg .swatch{fill:var(--c)}
svg .marker{stroke:#7b8394;stroke-dasharray:3 3}svg .marker-label{font-size:10.5px}
.s-rps{--c:#2563eb}.s-fill{--c:#bfd3fb}.s-p50{--c:#2563eb}.s-p99{--c:#d97706}.s-max{--c:#c62828}
.s-2xx{--c:#1b8a4b}.s-3xx{--c:#2563eb}.s-4xx{--c:#d97706}.s-5xx{--c:#c62828}.s-other{--c:#7c3aed}.s-err{--c:#4b5563}
.s-dist{--c:#2563eb}.s-pct{--c:#7c3aed}
details{margin-top:8px}
)";

// The command line as a shell would take it back: each argument quoted when it needs to be.
std::string shell_line(const std::vector<std::string>& args)
{
    std::string out = "idemgate-loadtest";
    for (const auto& a : args) {
        out += ' ';
        bool plain = !a.empty() && a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789-_./:=@%+,") == std::string::npos;
        if (plain) {
            out += a;
            continue;
        }
        out += '\'';
        for (char c : a)
            out += c == '\'' ? std::string("'\\''") : std::string(1, c);
        out += '\'';
    }
    return out;
}

void row(std::ostream& out, std::string_view name, const std::string& value)
{
    out << "<tr><th>" << html_escape(name) << "</th><td>" << html_escape(value) << "</td></tr>\n";
}

std::string count(std::uint64_t n)
{
    return std::to_string(n);
}

void write_summary(std::ostream& out, const run_result& r)
{
    const auto& t = r.timed;
    double rps = t.seconds > 0 ? static_cast<double>(t.answers) / t.seconds : 0;
    out << "<div class=\"grid2\"><div><h2>Run</h2><table>\n";
    row(out, "target", r.opts.url.text);
    row(out, "workload", describe_workload(r.opts));
    row(out, "connections",
        count(r.opts.connections) +
            (r.opts.http2 ? " x " + count(r.opts.streams) + " streams" : std::string()) + " over " +
            std::string(protocol_name(r.opts)) + ", " + count(r.opts.threads) + " threads");
    row(out, "keys", r.key_prefix + "-*");
    if (r.warmed_up)
        row(out, "warm-up",
            count(r.warmup.answers) + " answers in " + format_fixed(r.warmup.seconds, 2) + " s");
    row(out, "answers",
        count(t.answers) + " in " + format_fixed(t.seconds, 2) + " s = " + format_fixed(rps, 0) + " req/s");
    row(out, "bytes", count(t.bytes_sent) + " sent, " + count(t.bytes_received) + " received");
    row(out, "errors",
        count(t.errors()) + " (connect " + count(t.connect_errors) + ", write " + count(t.write_errors) +
            ", read " + count(t.read_errors) + ", timeout " + count(t.timeouts) + ")" +
            (t.first_error.empty() ? std::string() : "; first: " + t.first_error));
    out << "</table></div><div><h2>Latency</h2><table>\n";
    for (auto [name, p] : {std::pair{"p50", 50.0}, {"p90", 90.0}, {"p99", 99.0}, {"p99.9", 99.9}})
        row(out, name, format_latency(t.latency.percentile(p)));
    row(out, "max", format_latency(t.latency.max()));
    row(out, "mean", format_latency(static_cast<std::uint64_t>(t.latency.mean())));
    if (r.opts.rate || !r.opts.stages.empty())
        row(out, "counted from",
            "the intended send time (open loop); " + count(t.late_sends) + " sent > 1 ms late");
    out << "</table></div></div>\n";
}

void write_checks(std::ostream& out, const run_result& r)
{
    const auto& c = r.checks;
    out << "<div class=\"grid2\"><div><h2>Replay checks</h2><table>\n";
    row(out, "replays checked", count(c.replays_checked));
    row(out, "identical", count(c.replays_checked - std::min(c.replays_checked, c.replays_mismatched)));
    row(out, "differed",
        count(c.replays_mismatched) +
            (c.first_mismatch.empty() ? std::string() : " (first: " + c.first_mismatch + ")"));
    row(out, "without Idempotent-Replayed", count(c.replays_unmarked));
    row(out, "keys executed", count(r.expected_executions));
    row(out, "keys executed more than once", count(c.keys_executed_twice));
    row(out, "keys only replayed", count(c.unexpected_replays));
    row(out, "answers 409", count(r.timed.conflicts_409()));
    if (r.metrics_before && r.metrics_after) {
        double executed = r.metrics_after->outcome("executed") - r.metrics_before->outcome("executed");
        row(out, "gateway executed (metrics)",
            format_fixed(executed, 0) + " = " +
                (r.expected_executions
                     ? format_fixed(executed / static_cast<double>(r.expected_executions), 2)
                     : std::string("n/a")) +
                " per key");
    }
    // A run that stopped after its warm-up has only the warm-up's statuses to show.
    const auto& shown = r.timed.answers == 0 && r.warmed_up ? r.warmup : r.timed;
    out << "</table></div><div><h2>Statuses" << (&shown == &r.warmup ? " (warm-up)" : "") << "</h2><table>\n";
    for (std::size_t code = 0; code < shown.status.size(); ++code)
        if (shown.status[code])
            out << "<tr><th>" << code << "</th><td class=\"n\">" << shown.status[code] << "</td></tr>\n";
    for (const auto& [slug, n] : shown.problems)
        out << "<tr><th>" << html_escape(slug) << "</th><td class=\"n\">" << n << "</td></tr>\n";
    out << "</table></div></div>\n";
}

void write_verdict(std::ostream& out, const run_result& r)
{
    out << "<h2>Verdict</h2>\n<p><span class=\"verdict " << (r.ok() ? "pass\">PASS" : "fail\">FAIL")
        << "</span></p>\n";
    if (!r.threshold_results.empty()) {
        out << "<table><tr><th>threshold</th><th>observed</th><th></th></tr>\n";
        for (const auto& t : r.threshold_results)
            out << "<tr><td><code>" << html_escape(t.text) << "</code></td><td>"
                << html_escape(t.observed_text) << "</td><td>" << (t.pass ? "pass" : "<strong>FAIL</strong>")
                << "</td></tr>\n";
        out << "</table>\n";
    }
    if (!r.failures.empty()) {
        out << "<ul class=\"failures\">\n";
        for (const auto& f : r.failures)
            out << "<li>" << html_escape(f) << "</li>\n";
        out << "</ul>\n";
    }
}

void write_series_table(std::ostream& out, const run_result& r)
{
    if (r.series.empty())
        return;
    out << "<details><summary>The series, " << r.series.size() << " rows of "
        << html_escape(format_latency(static_cast<std::uint64_t>(r.opts.interval.count())))
        << "</summary><table>\n<tr><th>t (s)</th><th>answers</th><th>req/s</th><th>p50</th><th>p99</th>"
           "<th>max</th><th>2xx</th><th>3xx</th><th>4xx</th><th>5xx</th><th>errors</th><th>replays</th>"
           "<th>differed</th></tr>\n";
    for (const auto& s : r.series)
        out << "<tr><td class=\"n\">" << format_fixed(s.t_s, 2) << "</td><td class=\"n\">" << s.answers
            << "</td><td class=\"n\">" << format_fixed(s.rps, 0) << "</td><td class=\"n\">"
            << format_latency(s.p50_ns) << "</td><td class=\"n\">" << format_latency(s.p99_ns)
            << "</td><td class=\"n\">" << format_latency(s.max_ns) << "</td><td class=\"n\">"
            << s.status_class[2] << "</td><td class=\"n\">" << s.status_class[3] << "</td><td class=\"n\">"
            << s.status_class[4] << "</td><td class=\"n\">" << s.status_class[5] << "</td><td class=\"n\">"
            << s.errors << "</td><td class=\"n\">" << s.replays_checked << "</td><td class=\"n\">"
            << s.mismatches << "</td></tr>\n";
    out << "</table></details>\n";
}

std::string now_utc()
{
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[40];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

} // namespace

void write_html_report(std::ostream& out, const run_result& r)
{
    out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
           "<meta name=\"viewport\" content=\"width=device-width, "
           "initial-scale=1\">\n<title>idemgate-loadtest: "
        << html_escape(r.opts.url.text) << "</title>\n<style>" << style << "</style></head><body>\n";
    out << "<h1>idemgate-loadtest report <span class=\"verdict " << (r.ok() ? "pass\">PASS" : "fail\">FAIL")
        << "</span></h1>\n<p>" << html_escape(now_utc()) << ", idemgate-loadtest "
        << html_escape(IDEMGATE_VERSION) << "</p>\n<pre class=\"cmd\"><code>"
        << html_escape(shell_line(r.opts.command_line)) << "</code></pre>\n";
    write_summary(out, r);
    write_verdict(out, r);
    out << "<h2>Throughput</h2>\n" << detail::throughput_chart(r.series);
    out << "<h2>Latency over time</h2>\n" << detail::latency_chart(r.series);
    out << "<h2>Latency distribution</h2>\n" << detail::distribution_chart(r.timed.latency);
    out << "<h2>Latency by percentile</h2>\n" << detail::percentile_chart(r.timed.latency);
    out << "<h2>Status mix over time</h2>\n" << detail::status_chart(r.series);
    write_checks(out, r);
    write_series_table(out, r);
    out << "</body></html>\n";
}

} // namespace idemgate::loadtest
