// SPDX-License-Identifier: Apache-2.0
#include "phase_monitor.hpp"

#include <idemgate/loadtest/report.hpp>
#include <idemgate/loadtest/runner.hpp>
#include <limits>

namespace idemgate::loadtest {

void phase_stats::merge(const phase_stats& other)
{
    latency.merge(other.latency);
    for (std::size_t i = 0; i < status.size(); ++i)
        status[i] += other.status[i];
    for (const auto& [slug, n] : other.problems)
        problems[slug] += n;
    answers += other.answers;
    if (target_answers.size() < other.target_answers.size())
        target_answers.resize(other.target_answers.size());
    for (std::size_t i = 0; i < other.target_answers.size(); ++i)
        target_answers[i] += other.target_answers[i];
    connect_errors += other.connect_errors;
    write_errors += other.write_errors;
    read_errors += other.read_errors;
    timeouts += other.timeouts;
    in_flight_retries += other.in_flight_retries;
    gave_up += other.gave_up;
    late_sends += other.late_sends;
    unexpected += other.unexpected;
    bytes_sent += other.bytes_sent;
    bytes_received += other.bytes_received;
    if (first_error.empty())
        first_error = other.first_error;
    if (first_unexpected.empty()) {
        first_unexpected = other.first_unexpected;
        unexpected_hint = other.unexpected_hint;
    }
    stopped_early = stopped_early || other.stopped_early;
}

namespace detail {

void phase_monitor::watch(std::mutex& mutex, std::condition_variable& cv, const unsigned& running,
                          clock_type::time_point started)
{
    auto last_time = started;
    auto last_checked = checker.replays_checked();
    auto last_mismatched = checker.replays_mismatched();
    auto next = started + opts.interval;
    std::unique_lock lock(mutex);
    for (;;) {
        // The row that reaches a timed phase's end waits (up to half an interval more) for the
        // last answers, instead of leaving them a row of a few milliseconds of their own.
        auto deadline = next;
        if (end && next + opts.interval / 10 >= *end)
            deadline = std::max(next, *end) + opts.interval / 2;
        bool done = cv.wait_until(lock, deadline, [&] { return running == 0; });
        lock.unlock();
        auto now = clock_type::now();
        series_row row;
        log_histogram latency;
        for (auto& w : windows)
            w->drain(latency, row.status_class, row.errors);
        row.t_s = std::chrono::duration<double>(now - started).count();
        row.interval_s = std::chrono::duration<double>(now - last_time).count();
        row.answers = latency.count();
        row.rps = row.interval_s > 0 ? static_cast<double>(row.answers) / row.interval_s : 0;
        row.p50_ns = latency.percentile(50);
        row.p99_ns = latency.percentile(99);
        row.max_ns = latency.max();
        auto checked = checker.replays_checked(), mismatched = checker.replays_mismatched();
        row.replays_checked = checked - last_checked;
        row.mismatches = mismatched - last_mismatched;
        last_checked = checked;
        last_mismatched = mismatched;
        last_time = now;
        // The last, partial row only when something happened in it.
        bool emit = !done || row.answers || row.errors;
        if (emit && sink && metrics_before && !opts.metrics.empty()) {
            std::string error; // an unreadable scrape leaves the figure out; the run goes on
            if (auto m = scrape_gateway_metrics(opts.metrics, opts.timeout, error))
                row.executions = m->outcome("executed") - metrics_before->outcome("executed");
        }
        if (emit && sink)
            sink->add(row);
        if (progress && !done) {
            auto total = answers.load(std::memory_order_relaxed);
            double per_second = row.rps;
            double eta = -1;
            if (end)
                eta = std::max(0.0, std::chrono::duration<double>(*end - now).count());
            else if (limit != std::numeric_limits<std::uint64_t>::max() && per_second > 0)
                eta = static_cast<double>(limit - std::min(limit, total)) / per_second;
            progress_figures figures{
                row.t_s, eta, total, per_second, unexpected.load(), errors.load(), checker.failures(), &row};
            *progress << progress_line(label, figures) << std::flush;
        }
        if (done)
            break;
        next += opts.interval;
        if (next < now) // a slow scrape: the next row starts from now
            next = now + opts.interval;
        lock.lock();
    }
}

} // namespace detail

} // namespace idemgate::loadtest
