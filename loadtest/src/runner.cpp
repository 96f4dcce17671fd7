// SPDX-License-Identifier: Apache-2.0
#include "phase_monitor.hpp"
#include "preflight.hpp"
#include "request_lane.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <idemgate/common/use_tuple.hpp>
#include <idemgate/loadtest/expectations.hpp>
#include <idemgate/loadtest/http_client.hpp>
#include <idemgate/loadtest/report.hpp>
#include <idemgate/loadtest/request_template.hpp>
#include <idemgate/loadtest/runner.hpp>
#include <limits>
#include <random>
#include <thread>

namespace idemgate::loadtest {

namespace http = beast::http;
using clock_type = std::chrono::steady_clock;
using asio::ip::tcp;

namespace {

std::string random_prefix()
{
    std::random_device rd;
    char buf[32];
    std::snprintf(buf, sizeof buf, "lt-%08x%04x", rd(), rd() & 0xffffu);
    return buf;
}

// One phase as every connection sees it.
struct phase_plan {
    const options& opts;
    const std::vector<request_template>& requests; // one per target
    const std::vector<unsigned>& weight_ends;      // cumulative target weights
    answer_checker& checker;
    const std::string& prefix;
    tcp::resolver::results_type endpoints;
    bool warmup = false;
    std::uint64_t limit = std::numeric_limits<std::uint64_t>::max(); // requests (storm: copies)
    std::optional<clock_type::time_point> end;                       // duration
    clock_type::time_point start;

    asio::ssl::context* tls = nullptr;                // https://
    const gateway_counters* metrics_before = nullptr; // executions so far in the series
    series_sink* sink = nullptr;                      // the timed phase's rows

    std::atomic<std::uint64_t> next{0};
    std::atomic<std::uint64_t> answers{0};
    std::atomic<std::uint64_t> errors{0};
    std::atomic<std::uint64_t> unexpected{0};
    // Set when the first answers were nearly all unexpected: every connection stops.
    std::atomic<bool> stop{false};
};

// A phase whose first `stop_after` answers are at least 90 % unexpected stops there (unless
// --max-unexpected allows that share): thousands more refusals would measure nothing.
constexpr std::uint64_t stop_after = 100;

// Counts an answer against the run's expectations; stops the phase when nearly all are refusals.
void check_expected(phase_plan& plan, phase_stats& stats, const response& res)
{
    unsigned status = std::min<unsigned>(res.result_int(), 599);
    if (plan.opts.expected_statuses.test(status))
        return;
    ++stats.unexpected;
    if (stats.first_unexpected.empty()) {
        stats.first_unexpected = describe_answer(res);
        stats.unexpected_hint = hint_for(status, gateway_problem_slug(res), plan.opts);
    }
    auto unexpected = plan.unexpected.fetch_add(1, std::memory_order_relaxed) + 1;
    auto answers = plan.answers.load(std::memory_order_relaxed);
    // Not when the user allows that many: then the run is theirs to judge.
    if (plan.opts.max_unexpected_percent < 90 && answers >= std::min(stop_after, plan.limit) &&
        unexpected * 10 >= answers * 9)
        plan.stop.store(true, std::memory_order_relaxed);
}

// The key of request `seq`: an index in the checker's table, or none for a one-off new key.
struct key_choice {
    std::optional<std::uint64_t> table_index;
    std::string name;
    std::uint64_t identity = 0; // the table index, or the sequence number of a one-off key
};

// The target of a key, by weight: a hash of the key's identity, so every request for one key
// goes to the same target and its replays compare like with like.
std::size_t target_of(const phase_plan& plan, const key_choice& key)
{
    if (plan.requests.size() == 1)
        return 0;
    std::uint64_t z = key.identity + (key.table_index ? 0 : 0x8000000000000000ULL) + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL; // splitmix64's finaliser
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    auto slot = static_cast<unsigned>(z % plan.weight_ends.back());
    auto it = std::upper_bound(plan.weight_ends.begin(), plan.weight_ends.end(), slot);
    return static_cast<std::size_t>(it - plan.weight_ends.begin());
}

key_choice choose_key(const phase_plan& plan, std::uint64_t seq)
{
    const auto& o = plan.opts;
    auto table = [&](std::uint64_t i) { return key_choice{i, plan.prefix + "-" + std::to_string(i), i}; };
    auto fresh = [&]() { return key_choice{std::nullopt, plan.prefix + "-n" + std::to_string(seq), seq}; };
    if (plan.warmup)
        return table(seq);
    switch (o.mode) {
    case workload::replay: return table(seq % o.keys);
    case workload::first: return fresh();
    case workload::storm: return table(seq / o.copies);
    case workload::mixed: {
        // Exactly P replays in every 100 requests, spread evenly.
        auto p = static_cast<std::uint64_t>(o.replay_percent);
        std::uint64_t before = seq * p / 100, after = (seq + 1) * p / 100;
        if (after > before)
            return table(before % o.keys);
        return fresh();
    }
    }
    return fresh();
}

void count_answer(phase_stats& stats, const response& res)
{
    ++stats.answers;
    ++stats.status[std::min<unsigned>(res.result_int(), 599)];
    if (auto slug = gateway_problem_slug(res); !slug.empty()) {
        auto it = stats.problems.find(slug);
        if (it == stats.problems.end())
            stats.problems.emplace(std::string(slug), 1);
        else
            ++it->second;
    }
}

void count_error(phase_stats& stats, const exchange_error& err, const detail::request_lane& lane)
{
    if (stats.first_error.empty())
        stats.first_error = lane.failure(err);
    if (err.timed_out())
        ++stats.timeouts;
    else if (err.stage == exchange_stage::connect)
        ++stats.connect_errors;
    else if (err.stage == exchange_stage::write)
        ++stats.write_errors;
    else
        ++stats.read_errors;
}

// 409 while the first copy of a key is still running upstream: ask again (storm only).
bool in_flight(const response& res)
{
    return res.result_int() == 409 &&
           (gateway_problem_slug(res) == "request-in-flight" || res.count(http::field::retry_after) != 0);
}

// One lane's loop for a phase (a connection over HTTP/1.1, a stream slot over HTTP/2).
asio::awaitable<void> drive_lane(phase_plan& plan, phase_stats& stats, interval_window& window,
                                 std::unique_ptr<detail::request_lane> lane, unsigned index)
{
    const auto& o = plan.opts;
    auto executor = co_await asio::this_coro::executor;
    asio::steady_timer timer(executor);
    response res;
    std::vector<std::pair<std::string_view, std::string_view>> scratch;
    scratch.reserve(32);
    const bool open_loop = (o.rate || !o.stages.empty()) && !plan.warmup;
    // Open loop: lane `index` sends request n = index + i * L at start + n / rate, so the L lanes
    // together send `rate` requests per second at evenly spaced times (wrk2); in stages, at the
    // time the ramps have sent n requests.
    const double ns_per_request = o.rate && !plan.warmup ? 1e9 / *o.rate : 0;
    const bool storm = o.mode == workload::storm && !plan.warmup;

    for (std::uint64_t i = 0;; ++i) {
        if (plan.stop.load(std::memory_order_relaxed)) {
            stats.stopped_early = true;
            break;
        }
        clock_type::time_point intended{};
        if (open_loop) {
            double n = static_cast<double>(index) + static_cast<double>(i) * o.lanes();
            double offset = n * ns_per_request;
            if (!o.stages.empty()) {
                auto at = stage_offset_seconds(o.stages, n);
                if (!at)
                    break;
                offset = *at * 1e9;
            }
            intended = plan.start + std::chrono::nanoseconds(static_cast<std::int64_t>(offset));
            if (plan.end && intended >= *plan.end)
                break;
            if (intended > clock_type::now()) {
                timer.expires_at(intended);
                co_await timer.async_wait(use_tuple);
            }
        } else if (plan.end && clock_type::now() >= *plan.end) {
            break;
        }
        std::uint64_t seq = plan.next.fetch_add(1, std::memory_order_relaxed);
        if (seq >= plan.limit)
            break;
        key_choice key = choose_key(plan, seq);
        std::size_t target_index = target_of(plan, key);
        const request_template& target = plan.requests[target_index];

        auto first_attempt = clock_type::now();
        if (open_loop && first_attempt - intended > std::chrono::milliseconds(1))
            ++stats.late_sends;
        for (unsigned attempt = 0;; ++attempt) {
            auto sent = clock_type::now();
            // Open loop: the first attempt's latency counts from when it should have been sent.
            auto counted_from = open_loop && attempt == 0 ? intended : sent;
            exchange_bytes bytes;
            auto err = co_await lane->exchange(target, key.name, res, bytes);
            auto done = clock_type::now();
            stats.bytes_sent += bytes.sent;
            stats.bytes_received += bytes.received;
            if (err) {
                count_error(stats, err, *lane);
                window.error();
                plan.errors.fetch_add(1, std::memory_order_relaxed);
                if (err.stage == exchange_stage::connect && !err.timed_out()) {
                    // Refused or unreachable: do not spin; the next request tries again.
                    timer.expires_after(std::chrono::milliseconds(20));
                    co_await timer.async_wait(use_tuple);
                }
                break;
            }
            auto latency_ns = static_cast<std::uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(done - counted_from).count());
            stats.latency.record(latency_ns);
            window.answer(latency_ns, res.result_int());
            ++stats.target_answers[target_index];
            count_answer(stats, res);
            plan.answers.fetch_add(1, std::memory_order_relaxed);
            check_expected(plan, stats, res);
            if (storm && in_flight(res)) {
                if (done - first_attempt >= o.timeout) {
                    ++stats.gave_up;
                    break;
                }
                ++stats.in_flight_retries;
                // 1, 2, 4 ... 64 ms: prompt while the first copy is fast, gentle when it is slow.
                timer.expires_after(std::chrono::milliseconds(1u << std::min(attempt, 6u)));
                co_await timer.async_wait(use_tuple);
                continue;
            }
            if (key.table_index)
                plan.checker.observe_table_key(*key.table_index, key.name, res, scratch);
            else
                plan.checker.observe_new_key(key.name, res);
            break;
        }
    }
    lane->close();
}

// Runs one phase over `threads` io_contexts; returns the merged stats. A row of the series (and
// the live line, when `progress`) every --interval while it runs.
phase_stats run_phase(phase_plan& plan, std::ostream* progress, std::string_view label)
{
    const auto& o = plan.opts;
    unsigned threads = std::max(1u, o.threads);
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    std::vector<phase_stats> stats(threads);
    for (auto& s : stats)
        s.target_answers.resize(plan.requests.size());
    std::vector<std::unique_ptr<interval_window>> windows;
    for (unsigned t = 0; t < threads; ++t) {
        contexts.push_back(std::make_unique<asio::io_context>(1));
        windows.push_back(std::make_unique<interval_window>());
    }
    plan.start = clock_type::now() + std::chrono::milliseconds(1);
    if (o.duration && !plan.warmup)
        plan.end = plan.start + *o.duration;
    for (unsigned c = 0; c < o.connections; ++c) {
        unsigned t = c % threads;
        auto lanes = detail::connection_lanes(contexts[t]->get_executor(), o, plan.endpoints, plan.tls);
        for (unsigned s = 0; s < lanes.size(); ++s)
            asio::co_spawn(
                *contexts[t],
                drive_lane(plan, stats[t], *windows[t], std::move(lanes[s]), c + s * o.connections),
                [](std::exception_ptr e) {
                    if (e)
                        std::rethrow_exception(e);
                });
    }
    std::mutex mutex;
    std::condition_variable cv;
    unsigned running = threads;
    std::vector<std::thread> workers;
    for (unsigned t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            contexts[t]->run();
            std::lock_guard lock(mutex);
            --running;
            cv.notify_all();
        });
    auto started = clock_type::now();
    detail::phase_monitor monitor{
        o, label, windows, plan.checker, plan.answers, plan.unexpected, plan.errors, plan.end, plan.limit};
    monitor.progress = progress;
    monitor.sink = plan.sink;
    monitor.metrics_before = plan.metrics_before;
    monitor.watch(mutex, cv, running, started);
    for (auto& w : workers)
        w.join();
    if (progress)
        *progress << "\r\x1b[K" << std::flush;
    phase_stats total;
    for (const auto& s : stats)
        total.merge(s);
    total.seconds = std::chrono::duration<double>(clock_type::now() - started).count();
    return total;
}

} // namespace

run_result run(const options& opts, std::ostream* progress)
{
    run_result r;
    r.opts = opts;
    r.key_prefix = opts.key_prefix.empty() ? random_prefix() : opts.key_prefix;
    auto endpoints = detail::resolve(opts.url);
    std::optional<asio::ssl::context> tls;
    if (opts.url.tls) {
        std::string error;
        tls = client_tls_context(opts.insecure, opts.cacert, error);
        if (!tls)
            throw run_error(error);
    }
    asio::ssl::context* tls_ptr = tls ? &*tls : nullptr;
    detail::probe(opts, endpoints, tls_ptr);
    if (!opts.metrics.empty()) {
        std::string error;
        r.metrics_before = scrape_gateway_metrics(opts.metrics, opts.timeout, error);
        if (!r.metrics_before)
            throw run_error("--metrics: " + error);
    }
    std::vector<request_template> requests;
    std::vector<unsigned> weight_ends;
    if (opts.targets.empty()) {
        requests.emplace_back(opts);
        weight_ends.push_back(1);
    }
    for (const auto& t : opts.targets) {
        requests.emplace_back(opts, t.method, t.url.target, t.body ? *t.body : opts.body);
        weight_ends.push_back((weight_ends.empty() ? 0 : weight_ends.back()) + t.weight);
    }
    series_sink sink;
    if (!opts.series_path.empty()) {
        std::string error;
        if (!sink.open(opts.series_path, opts.series_fmt, error))
            throw run_error(error);
    }
    std::uint64_t table_keys = opts.mode == workload::first ? 0 : opts.keys;
    answer_checker checker(table_keys, r.key_prefix, opts.ignore_headers);

    bool warm = opts.mode == workload::replay || (opts.mode == workload::mixed && opts.replay_percent > 0);
    if (warm) {
        phase_plan plan{opts, requests, weight_ends, checker, r.key_prefix, endpoints};
        plan.tls = tls_ptr;
        plan.warmup = true;
        plan.limit = opts.keys;
        r.warmup = run_phase(plan, progress, "warm-up");
        r.warmed_up = true;
    }
    // A warm-up that got (nearly) nothing but unexpected answers has already failed: the timed
    // phase would only measure the same refusal faster.
    bool warmup_failed = r.warmed_up && opts.max_unexpected_percent < 90 && r.warmup.answers > 0 &&
                         r.warmup.unexpected * 10 >= r.warmup.answers * 9;
    if (!warmup_failed) {
        phase_plan plan{opts, requests, weight_ends, checker, r.key_prefix, endpoints};
        plan.tls = tls_ptr;
        plan.sink = &sink;
        plan.metrics_before = r.metrics_before ? &*r.metrics_before : nullptr;
        if (opts.mode == workload::storm)
            plan.limit = opts.keys * opts.copies;
        else if (opts.requests)
            plan.limit = *opts.requests;
        r.timed = run_phase(plan, progress, to_string(opts.mode));
    }
    r.checks = checker.totals();
    r.series = sink.rows();
    if (sink.write_failed())
        r.failures.push_back("--series: writing \"" + opts.series_path + "\" failed");
    r.expected_executions = r.checks.keys_executed + r.checks.new_keys_executed;
    if (r.metrics_before) {
        std::string error;
        r.metrics_after =
            detail::settled_metrics(opts, *r.metrics_before, r.warmup.answers + r.timed.answers, error);
        if (!r.metrics_after)
            r.failures.push_back("--metrics after the run: " + error);
    }
    judge(r);
    return r;
}

} // namespace idemgate::loadtest
