// SPDX-License-Identifier: Apache-2.0
#include <boost/json/array.hpp>
#include <cmath>
#include <cstdio>
#include <idemgate/loadtest/expectations.hpp>
#include <idemgate/loadtest/report.hpp>

#ifndef IDEMGATE_VERSION
#define IDEMGATE_VERSION "dev"
#endif

namespace idemgate::loadtest {

namespace json = boost::json;

namespace {

struct percentile_row {
    const char* text;
    const char* json;
    double value;
};
constexpr percentile_row percentiles[] = {
    {"p50", "p50", 50}, {"p90", "p90", 90}, {"p95", "p95", 95}, {"p99", "p99", 99}, {"p99.9", "p99_9", 99.9}};

double rate(std::uint64_t n, double seconds)
{
    return seconds > 0 ? static_cast<double>(n) / seconds : 0;
}

std::string status_text(const phase_stats& s)
{
    std::string out;
    for (std::size_t code = 0; code < s.status.size(); ++code) {
        if (!s.status[code])
            continue;
        if (!out.empty())
            out += "  ";
        out += (code == 599 ? std::string("599+") : std::to_string(code)) + ": " +
               std::to_string(s.status[code]);
    }
    return out.empty() ? "none" : out;
}

std::string loop_text(const options& o)
{
    if (!o.stages.empty()) {
        std::string out = "open loop in stages";
        for (const auto& st : o.stages) {
            // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "..." + std::string.
            out += ' ';
            out += format_fixed(std::chrono::duration<double>(st.duration).count(), 1);
            out += "s:";
            out += format_fixed(st.rate, 0);
        }
        return out + " req/s";
    }
    if (o.rate)
        return "open loop at " + format_fixed(*o.rate, 0) + " req/s";
    return "closed loop";
}

std::string workload_text(const options& o)
{
    switch (o.mode) {
    case workload::replay: return "replay of " + std::to_string(o.keys) + " warm keys";
    case workload::first: return "first executions (a new key per request)";
    case workload::mixed:
        return "mixed: " + std::to_string(o.replay_percent) + " % replays of " + std::to_string(o.keys) +
               " warm keys, the rest new keys";
    case workload::storm:
        return "storm: " + std::to_string(o.keys) + " keys x " + std::to_string(o.copies) +
               " concurrent copies";
    }
    return "";
}

json::object phase_json(const phase_stats& s)
{
    json::object out;
    out["answers"] = s.answers;
    out["seconds"] = s.seconds;
    out["rps"] = rate(s.answers, s.seconds);
    json::object latency;
    for (const auto& p : percentiles)
        latency[p.json] = static_cast<double>(s.latency.percentile(p.value)) / 1000.0;
    latency["max"] = static_cast<double>(s.latency.max()) / 1000.0;
    latency["min"] = static_cast<double>(s.latency.min()) / 1000.0;
    latency["mean"] = s.latency.mean() / 1000.0;
    out["latency_us"] = std::move(latency);
    json::object status;
    for (std::size_t code = 0; code < s.status.size(); ++code)
        if (s.status[code])
            status[std::to_string(code)] = s.status[code];
    out["status"] = std::move(status);
    json::object problems;
    for (const auto& [slug, n] : s.problems)
        problems[slug] = n;
    out["gateway_problems"] = std::move(problems);
    out["errors"] = json::object{{"connect", s.connect_errors},
                                 {"write", s.write_errors},
                                 {"read", s.read_errors},
                                 {"timeout", s.timeouts}};
    if (!s.first_error.empty())
        out["first_error"] = s.first_error;
    out["unexpected"] = s.unexpected;
    if (!s.first_unexpected.empty())
        out["first_unexpected"] = s.first_unexpected;
    if (!s.unexpected_hint.empty())
        out["hint"] = s.unexpected_hint;
    out["stopped_early"] = s.stopped_early;
    out["bytes"] = json::object{{"sent", s.bytes_sent}, {"received", s.bytes_received}};
    out["conflicts_409"] = s.conflicts_409();
    out["in_flight_retries"] = s.in_flight_retries;
    out["storm_gave_up"] = s.gave_up;
    out["late_sends"] = s.late_sends;
    return out;
}

std::string byte_text(std::uint64_t n)
{
    double v = static_cast<double>(n);
    if (n < 10 * 1024)
        return std::to_string(n) + " B";
    if (n < 10ULL * 1024 * 1024)
        return format_fixed(v / 1024, 1) + " KiB";
    if (n < 10ULL * 1024 * 1024 * 1024)
        return format_fixed(v / (1024.0 * 1024), 1) + " MiB";
    return format_fixed(v / (1024.0 * 1024 * 1024), 2) + " GiB";
}

} // namespace

std::string describe_workload(const options& o)
{
    return workload_text(o) + "; " + loop_text(o);
}

std::string_view protocol_name(const options& o)
{
    if (!o.http2)
        return "HTTP/1.1";
    return o.url.tls ? "h2" : "h2c";
}

std::string format_fixed(double v, int decimals)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string progress_line(std::string_view label, const progress_figures& f)
{
    char eta_text[32] = "";
    if (f.eta_s >= 0)
        std::snprintf(eta_text, sizeof eta_text, "  eta %.0fs", std::ceil(f.eta_s));
    char line[240];
    std::snprintf(line, sizeof line,
                  "\r\x1b[K%.*s %6.1fs%s  %llu answers  %.0f req/s  unexpected %llu  errors %llu  "
                  "check failures %llu",
                  static_cast<int>(label.size()), label.data(), f.elapsed_s, eta_text,
                  static_cast<unsigned long long>(f.answers), f.per_second,
                  static_cast<unsigned long long>(f.unexpected), static_cast<unsigned long long>(f.errors),
                  static_cast<unsigned long long>(f.check_failures));
    std::string out = line;
    if (const auto* r = f.row) {
        // The interval's own figures, as the time series has them.
        out += "  | p50 " + format_latency(r->p50_ns) + " p99 " + format_latency(r->p99_ns) + " max " +
               format_latency(r->max_ns) + "  2xx " + std::to_string(r->status_class[2]) + " 4xx " +
               std::to_string(r->status_class[4]) + " 5xx " + std::to_string(r->status_class[5]) + " err " +
               std::to_string(r->errors) + "  replays " + std::to_string(r->replays_checked) + " (" +
               std::to_string(r->mismatches) + " differed)";
        if (r->executions)
            out += "  executions " + format_fixed(*r->executions, 0);
    }
    return out;
}

std::string format_latency(std::uint64_t ns)
{
    double v = static_cast<double>(ns);
    if (ns < 1'000'000)
        return format_fixed(v / 1e3, v < 10'000 ? 1 : 0) + "us";
    if (ns < 1'000'000'000)
        return format_fixed(v / 1e6, v < 10'000'000 ? 2 : 1) + "ms";
    return format_fixed(v / 1e9, 2) + "s";
}

void write_text_report(std::ostream& out, const run_result& r)
{
    const auto& o = r.opts;
    const auto& t = r.timed;
    out << "idemgate-loadtest " << o.url.text << "\n";
    out << "  workload     " << workload_text(o) << "; " << o.connections << " connections"
        << (o.http2 ? " x " + std::to_string(o.streams) + (o.streams == 1 ? " stream" : " streams")
                    : std::string())
        << " over " << protocol_name(o) << ", " << o.threads << (o.threads == 1 ? " thread, " : " threads, ")
        << loop_text(o) << "; keys " << r.key_prefix << "-*\n";
    for (std::size_t i = 0; i < o.targets.size() && i < t.target_answers.size(); ++i)
        out << "  target       " << o.targets[i].method << " " << o.targets[i].url.text << " (weight "
            << o.targets[i].weight << "): " << t.target_answers[i] << " answers\n";
    if (r.warmed_up)
        out << "  warm-up      " << r.warmup.answers << " answers in " << format_fixed(r.warmup.seconds, 2)
            << " s (" << status_text(r.warmup) << ")\n";
    out << "  requests     " << t.answers << " answers in " << format_fixed(t.seconds, 2)
        << " s = " << format_fixed(rate(t.answers, t.seconds), 0) << " req/s\n";
    out << "  latency      ";
    for (const auto& p : percentiles)
        out << p.text << " " << format_latency(t.latency.percentile(p.value)) << "  ";
    out << "max " << format_latency(t.latency.max()) << "  mean "
        << format_latency(static_cast<std::uint64_t>(t.latency.mean()));
    if (o.rate)
        out << "  (from the intended send time; " << t.late_sends << " requests sent > 1 ms late)";
    out << "\n";
    out << "  status       " << status_text(t) << "\n";
    out << "  bytes        " << byte_text(t.bytes_sent) << " sent, " << byte_text(t.bytes_received)
        << " received (" << byte_text(static_cast<std::uint64_t>(rate(t.bytes_received, t.seconds)))
        << "/s in)\n";
    std::uint64_t unexpected = r.warmup.unexpected + t.unexpected;
    if (unexpected) {
        const auto& first = r.warmup.first_unexpected.empty() ? t : r.warmup;
        out << "  unexpected   " << unexpected << " answers not " << describe(o.expected_statuses)
            << (r.warmup.unexpected ? " (" + std::to_string(r.warmup.unexpected) + " in the warm-up)" : "")
            << "; first: " << first.first_unexpected << "\n";
        if (!first.unexpected_hint.empty())
            out << "  hint         " << first.unexpected_hint << "\n";
    }
    if (!t.problems.empty()) {
        out << "  problems     ";
        for (const auto& [slug, n] : t.problems)
            out << slug << ": " << n << "  ";
        out << "(its own problem+json answers)\n";
    }
    if (t.errors())
        out << "  errors       connect " << t.connect_errors << ", write " << t.write_errors << ", read "
            << t.read_errors << ", timeout " << t.timeouts << "; first: " << t.first_error << "\n";
    const auto& c = r.checks;
    out << "  replays      " << c.replays_checked << " answers checked against their key's first answer: "
        << c.replays_checked - std::min(c.replays_checked, c.replays_mismatched) << " identical, "
        << c.replays_mismatched << " differed; " << c.replays_unmarked
        << " repeated executions (no Idempotent-Replayed: true)\n";
    out << "  conflicts    " << t.conflicts_409() << " answers 409";
    if (o.mode == workload::storm)
        out << " (" << t.in_flight_retries << " request-in-flight asked again)";
    out << "\n";
    out << "  executions   " << r.expected_executions << " keys executed by this run (answered without "
        << "Idempotent-Replayed)";
    if (c.keys_executed_twice)
        out << "; " << c.keys_executed_twice << " keys executed more than once";
    if (c.unexpected_replays)
        out << "; " << c.unexpected_replays << " keys only replayed";
    out << "\n";
    if (r.metrics_before && r.metrics_after) {
        double executed = r.metrics_after->outcome("executed") - r.metrics_before->outcome("executed");
        double replayed = r.metrics_after->outcome("replayed") - r.metrics_before->outcome("replayed");
        double conflict = r.metrics_after->outcome("conflict") - r.metrics_before->outcome("conflict");
        out << "  gateway      executed +" << format_fixed(executed, 0) << ", replayed +"
            << format_fixed(replayed, 0) << ", conflict +" << format_fixed(conflict, 0) << " (metrics): "
            << (r.expected_executions ? format_fixed(executed / static_cast<double>(r.expected_executions), 2)
                                      : "n/a")
            << " upstream executions per key\n";
    }
    for (const auto& th : r.threshold_results)
        out << "  threshold    " << th.text << "  " << (th.pass ? "pass" : "FAIL") << " (" << th.observed_text
            << ")\n";
    if (!r.opts.series_path.empty())
        out << "  series       " << r.series.size() << " rows of "
            << format_latency(static_cast<std::uint64_t>(r.opts.interval.count())) << " in "
            << r.opts.series_path << "\n";
    if (!r.opts.report_path.empty())
        out << "  report       " << r.opts.report_path << "\n";
    if (r.ok()) {
        out << "  result       PASS\n";
    } else {
        out << "  result       FAIL\n";
        for (const auto& f : r.failures)
            out << "    - " << f << "\n";
    }
}

json::object json_report(const run_result& r)
{
    const auto& o = r.opts;
    json::object out;
    out["tool"] = "idemgate-loadtest";
    out["version"] = IDEMGATE_VERSION;
    out["url"] = o.url.text;
    out["mode"] = to_string(o.mode);
    if (o.mode == workload::mixed)
        out["replay_percent"] = o.replay_percent;
    out["keys"] = o.keys;
    if (o.mode == workload::storm)
        out["copies"] = o.copies;
    out["key_prefix"] = r.key_prefix;
    out["connections"] = o.connections;
    out["protocol"] = protocol_name(o);
    if (o.http2)
        out["streams"] = o.streams;
    out["threads"] = o.threads;
    out["loop"] = o.rate || !o.stages.empty() ? "open" : "closed";
    if (o.rate)
        out["rate"] = *o.rate;
    if (!o.stages.empty()) {
        json::array stages;
        for (const auto& st : o.stages)
            stages.push_back(json::object{{"duration_s", std::chrono::duration<double>(st.duration).count()},
                                          {"rate", st.rate}});
        out["stages"] = std::move(stages);
    }
    if (!o.targets.empty()) {
        json::array targets;
        for (std::size_t i = 0; i < o.targets.size(); ++i) {
            const auto& t = o.targets[i];
            std::uint64_t answers = i < r.timed.target_answers.size() ? r.timed.target_answers[i] : 0;
            targets.push_back(json::object{
                {"method", t.method}, {"url", t.url.text}, {"weight", t.weight}, {"answers", answers}});
        }
        out["targets"] = std::move(targets);
    }
    if (o.duration)
        out["duration_s"] = std::chrono::duration<double>(*o.duration).count();
    if (o.requests)
        out["requests_asked"] = *o.requests;
    if (r.warmed_up)
        out["warmup"] = phase_json(r.warmup);
    json::object timed = phase_json(r.timed);
    for (auto& [k, v] : timed)
        out[k] = v;
    const auto& c = r.checks;
    out["checks"] = json::object{{"replays_checked", c.replays_checked},
                                 {"replays_mismatched", c.replays_mismatched},
                                 {"replays_unmarked", c.replays_unmarked},
                                 {"unexpected_replays", c.unexpected_replays},
                                 {"keys_executed_more_than_once", c.keys_executed_twice},
                                 {"keys_without_answer", c.keys_without_answer},
                                 {"first_mismatch", c.first_mismatch},
                                 {"first_unmarked", c.first_unmarked},
                                 {"first_unexpected", c.first_unexpected}};
    json::object executions;
    executions["keys_executed"] = r.expected_executions;
    if (r.metrics_before && r.metrics_after) {
        json::object m;
        for (const auto& [name, after] : r.metrics_after->by_outcome) {
            double delta = after - r.metrics_before->outcome(name);
            if (delta == std::floor(delta) && std::fabs(delta) < 9e15)
                m[name] = static_cast<std::int64_t>(delta); // counters: integers in the JSON
            else
                m[name] = delta;
        }
        double executed = r.metrics_after->outcome("executed") - r.metrics_before->outcome("executed");
        executions["gateway"] = std::move(m);
        executions["per_key"] = r.expected_executions ? executed / static_cast<double>(r.expected_executions)
                                                      : json::value(nullptr);
    }
    out["executions"] = std::move(executions);
    out["interval_s"] = std::chrono::duration<double>(o.interval).count();
    json::array series;
    for (const auto& row : r.series)
        series.push_back(series_row_json(row));
    out["series"] = std::move(series);
    json::array thresholds;
    for (const auto& t : r.threshold_results)
        thresholds.push_back(json::object{{"threshold", t.text},
                                          {"observed", t.observed},
                                          {"observed_text", t.observed_text},
                                          {"pass", t.pass}});
    out["thresholds"] = std::move(thresholds);
    json::array failures;
    for (const auto& f : r.failures)
        failures.emplace_back(f);
    out["failures"] = std::move(failures);
    out["ok"] = r.ok();
    return out;
}

} // namespace idemgate::loadtest
