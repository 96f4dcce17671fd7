#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <condition_variable>
#include <cstdio>
#include <idemgate/loadtest/http_client.hpp>
#include <idemgate/loadtest/request_template.hpp>
#include <idemgate/loadtest/runner.hpp>
#include <limits>
#include <random>
#include <thread>

namespace idemgate::loadtest {

namespace http = beast::http;
using clock_type = std::chrono::steady_clock;
using asio::ip::tcp;

void phase_stats::merge(const phase_stats& other)
{
    latency.merge(other.latency);
    for (std::size_t i = 0; i < status.size(); ++i)
        status[i] += other.status[i];
    for (const auto& [slug, n] : other.problems)
        problems[slug] += n;
    answers += other.answers;
    connect_errors += other.connect_errors;
    write_errors += other.write_errors;
    read_errors += other.read_errors;
    timeouts += other.timeouts;
    in_flight_retries += other.in_flight_retries;
    gave_up += other.gave_up;
    late_sends += other.late_sends;
}

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

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
    const request_template& request;
    answer_checker& checker;
    const std::string& prefix;
    tcp::resolver::results_type endpoints;
    bool warmup = false;
    std::uint64_t limit = std::numeric_limits<std::uint64_t>::max(); // requests (storm: copies)
    std::optional<clock_type::time_point> end;                       // duration
    clock_type::time_point start;

    std::atomic<std::uint64_t> next{0};
    std::atomic<std::uint64_t> answers{0};
    std::atomic<std::uint64_t> errors{0};
};

// The key of request `seq`: an index in the checker's table, or none for a one-off new key.
struct key_choice {
    std::optional<std::uint64_t> table_index;
    std::string name;
};

key_choice choose_key(const phase_plan& plan, std::uint64_t seq)
{
    const auto& o = plan.opts;
    auto table = [&](std::uint64_t i) { return key_choice{i, plan.prefix + "-" + std::to_string(i)}; };
    auto fresh = [&]() { return key_choice{std::nullopt, plan.prefix + "-n" + std::to_string(seq)}; };
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

void count_error(phase_stats& stats, const exchange_error& err)
{
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

// One connection's loop for a phase.
asio::awaitable<void> drive_connection(phase_plan& plan, phase_stats& stats, unsigned index)
{
    const auto& o = plan.opts;
    auto executor = co_await asio::this_coro::executor;
    http_client_connection conn(executor, plan.endpoints, o.timeout);
    asio::steady_timer timer(executor);
    std::string request;
    response res;
    std::vector<std::pair<std::string_view, std::string_view>> scratch;
    scratch.reserve(32);
    const bool open_loop = o.rate && !plan.warmup;
    // Open loop: connection `index` sends its i-th request at start + (index + i * C) / rate, so the
    // C connections together send `rate` requests per second at evenly spaced times (wrk2).
    const double ns_per_request = open_loop ? 1e9 / *o.rate : 0;
    const bool storm = o.mode == workload::storm && !plan.warmup;

    for (std::uint64_t i = 0;; ++i) {
        clock_type::time_point intended{};
        if (open_loop) {
            double offset =
                (static_cast<double>(index) + static_cast<double>(i) * o.connections) * ns_per_request;
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
        plan.request.render(request, key.name);

        auto first_attempt = clock_type::now();
        if (open_loop && first_attempt - intended > std::chrono::milliseconds(1))
            ++stats.late_sends;
        for (unsigned attempt = 0;; ++attempt) {
            auto sent = clock_type::now();
            // Open loop: the first attempt's latency counts from when it should have been sent.
            auto counted_from = open_loop && attempt == 0 ? intended : sent;
            auto err = co_await conn.exchange(request, res, plan.request.head_request());
            auto done = clock_type::now();
            if (err) {
                count_error(stats, err);
                plan.errors.fetch_add(1, std::memory_order_relaxed);
                if (err.stage == exchange_stage::connect && !err.timed_out()) {
                    // Refused or unreachable: do not spin; the next request tries again.
                    timer.expires_after(std::chrono::milliseconds(20));
                    co_await timer.async_wait(use_tuple);
                }
                break;
            }
            stats.latency.record(static_cast<std::uint64_t>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(done - counted_from).count()));
            count_answer(stats, res);
            plan.answers.fetch_add(1, std::memory_order_relaxed);
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
    conn.close();
}

// Runs one phase over `threads` io_contexts; returns the merged stats. `progress` is drawn
// about once a second while it runs.
phase_stats run_phase(phase_plan& plan, std::ostream* progress, std::string_view label)
{
    const auto& o = plan.opts;
    unsigned threads = std::max(1u, o.threads);
    std::vector<std::unique_ptr<asio::io_context>> contexts;
    std::vector<phase_stats> stats(threads);
    for (unsigned t = 0; t < threads; ++t)
        contexts.push_back(std::make_unique<asio::io_context>(1));
    plan.start = clock_type::now() + std::chrono::milliseconds(1);
    if (o.duration && !plan.warmup)
        plan.end = plan.start + *o.duration;
    for (unsigned c = 0; c < o.connections; ++c) {
        unsigned t = c % threads;
        asio::co_spawn(*contexts[t], drive_connection(plan, stats[t], c), [](std::exception_ptr e) {
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
    {
        std::unique_lock lock(mutex);
        auto last_answers = plan.answers.load();
        auto last_time = started;
        while (!cv.wait_for(lock, std::chrono::seconds(1), [&] { return running == 0; })) {
            if (!progress)
                continue;
            auto now = clock_type::now();
            auto answers = plan.answers.load(std::memory_order_relaxed);
            double interval = std::chrono::duration<double>(now - last_time).count();
            double elapsed = std::chrono::duration<double>(now - started).count();
            char line[200];
            std::snprintf(line, sizeof line,
                          "\r\x1b[K%s %6.1fs  %llu answers  %.0f req/s  errors %llu  check failures %llu",
                          std::string(label).c_str(), elapsed, static_cast<unsigned long long>(answers),
                          interval > 0 ? static_cast<double>(answers - last_answers) / interval : 0.0,
                          static_cast<unsigned long long>(plan.errors.load()),
                          static_cast<unsigned long long>(plan.checker.failures()));
            *progress << line << std::flush;
            last_answers = answers;
            last_time = now;
        }
    }
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

tcp::resolver::results_type resolve(const target_url& url)
{
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    boost::system::error_code ec;
    auto results = resolver.resolve(url.host, url.port, ec);
    if (ec)
        throw run_error("cannot resolve " + url.host + ": " + ec.message());
    return results;
}

// One connection before the run: a target that refuses is a usage problem, not a failed check.
void probe(const options& o, const tcp::resolver::results_type& endpoints)
{
    exchange_error result{asio::error::timed_out, exchange_stage::connect};
    asio::io_context ioc(1);
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto executor = co_await asio::this_coro::executor;
            http_client_connection conn(executor, endpoints, o.timeout);
            result = co_await conn.connect();
            conn.close();
        },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
    ioc.run_for(o.timeout + std::chrono::seconds(1));
    if (result)
        throw run_error("cannot connect to " + o.url.host_header + ": " + result.ec.message());
}

// Reads the metrics after the run. The gateway counts a request after writing its answer, so
// the last answers can reach us before they are counted: read until the gateway has counted at
// least as many requests as we received answers (bounded).
std::optional<gateway_counters> settled_metrics(const options& o, const gateway_counters& before,
                                                std::uint64_t answers, std::string& error)
{
    auto deadline = clock_type::now() + std::chrono::seconds(3);
    std::optional<gateway_counters> after;
    for (;;) {
        error.clear();
        after = scrape_gateway_metrics(o.metrics, o.timeout, error);
        if (!after)
            return after;
        if (after->total() - before.total() >= static_cast<double>(answers) || clock_type::now() >= deadline)
            return after;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

std::string count_text(double v)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
}

void judge(run_result& r)
{
    const auto& o = r.opts;
    const auto& c = r.checks;
    auto& f = r.failures;
    auto example = [](const std::string& e) { return e.empty() ? std::string() : " (first: " + e + ")"; };
    if (c.replays_mismatched)
        f.push_back(std::to_string(c.replays_mismatched) + " answers differed from their key's first answer" +
                    example(c.first_mismatch));
    if (c.replays_unmarked)
        f.push_back(std::to_string(c.replays_unmarked) +
                    " answers were executions of a key already executed (no Idempotent-Replayed: true; " +
                    std::to_string(c.keys_executed_twice) + " keys)" + example(c.first_unmarked));
    if (c.unexpected_replays)
        f.push_back(std::to_string(c.unexpected_replays) +
                    " keys were never executed by this run, only replayed" + example(c.first_unexpected));
    bool expects_replays = o.mode == workload::replay || o.mode == workload::storm ||
                           (o.mode == workload::mixed && o.replay_percent > 0);
    if (expects_replays && c.replays_checked == 0)
        f.push_back("no replay was checked: no key got a recorded first answer and a second answer (see the "
                    "status counts)");
    if (o.mode == workload::storm) {
        if (c.keys_without_answer)
            f.push_back(std::to_string(c.keys_without_answer) + " storm keys never got a recorded answer");
        if (r.timed.gave_up)
            f.push_back(std::to_string(r.timed.gave_up) +
                        " storm copies were still 409 request-in-flight after --timeout");
    }
    std::uint64_t errors = r.warmup.errors() + r.timed.errors();
    if (errors)
        f.push_back(std::to_string(errors) + " requests failed without an answer (connect " +
                    std::to_string(r.warmup.connect_errors + r.timed.connect_errors) + ", write " +
                    std::to_string(r.warmup.write_errors + r.timed.write_errors) + ", read " +
                    std::to_string(r.warmup.read_errors + r.timed.read_errors) + ", timeout " +
                    std::to_string(r.warmup.timeouts + r.timed.timeouts) + ")");
    if (r.timed.answers == 0)
        f.push_back("the timed phase got no answer at all");
    if (r.metrics_before && r.metrics_after) {
        double executed = r.metrics_after->outcome("executed") - r.metrics_before->outcome("executed");
        if (executed != static_cast<double>(r.expected_executions))
            f.push_back("the gateway executed " + count_text(executed) + " requests upstream for " +
                        std::to_string(r.expected_executions) +
                        " keys this run executed (its metrics; another client's traffic counts too)");
    }
}

} // namespace

run_result run(const options& opts, std::ostream* progress)
{
    run_result r;
    r.opts = opts;
    r.key_prefix = opts.key_prefix.empty() ? random_prefix() : opts.key_prefix;
    auto endpoints = resolve(opts.url);
    probe(opts, endpoints);
    if (!opts.metrics.empty()) {
        std::string error;
        r.metrics_before = scrape_gateway_metrics(opts.metrics, opts.timeout, error);
        if (!r.metrics_before)
            throw run_error("--metrics: " + error);
    }
    request_template request(opts);
    std::uint64_t table_keys = opts.mode == workload::first ? 0 : opts.keys;
    answer_checker checker(table_keys, r.key_prefix, opts.ignore_headers);

    bool warm = opts.mode == workload::replay || (opts.mode == workload::mixed && opts.replay_percent > 0);
    if (warm) {
        phase_plan plan{opts, request, checker, r.key_prefix, endpoints};
        plan.warmup = true;
        plan.limit = opts.keys;
        r.warmup = run_phase(plan, progress, "warm-up");
        r.warmed_up = true;
    }
    {
        phase_plan plan{opts, request, checker, r.key_prefix, endpoints};
        if (opts.mode == workload::storm)
            plan.limit = opts.keys * opts.copies;
        else if (opts.requests)
            plan.limit = *opts.requests;
        r.timed = run_phase(plan, progress, to_string(opts.mode));
    }
    r.checks = checker.totals();
    r.expected_executions = r.checks.keys_executed + r.checks.new_keys_executed;
    if (r.metrics_before) {
        std::string error;
        r.metrics_after = settled_metrics(opts, *r.metrics_before, r.warmup.answers + r.timed.answers, error);
        if (!r.metrics_after)
            r.failures.push_back("--metrics after the run: " + error);
    }
    judge(r);
    return r;
}

} // namespace idemgate::loadtest
