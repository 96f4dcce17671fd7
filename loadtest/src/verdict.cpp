// SPDX-License-Identifier: Apache-2.0
// The verdict of a run: every check that failed, one line each, the loudest first.
#include <cstdio>
#include <idemgate/loadtest/expectations.hpp>
#include <idemgate/loadtest/report.hpp>
#include <idemgate/loadtest/runner.hpp>

namespace idemgate::loadtest {

namespace {

// Out of line: GCC 12 warns falsely (-Warray-bounds) on a literal moved into the vector inline.
[[gnu::noinline]] void add(std::vector<std::string>& failures, std::string_view text)
{
    failures.emplace_back(text);
}

} // namespace

void judge(run_result& r)
{
    const auto& o = r.opts;
    const auto& c = r.checks;
    auto& f = r.failures;
    // The loudest first: a run whose answers were mostly refusals measured nothing else.
    std::uint64_t answers = r.warmup.answers + r.timed.answers;
    std::uint64_t unexpected = r.warmup.unexpected + r.timed.unexpected;
    double share = answers ? 100.0 * static_cast<double>(unexpected) / static_cast<double>(answers) : 0;
    if (unexpected && share > o.max_unexpected_percent) {
        const auto& first = r.warmup.first_unexpected.empty() ? r.timed : r.warmup;
        std::string line = std::to_string(unexpected) + " of " + std::to_string(answers) + " answers (" +
                           format_fixed(share, share < 10 ? 2 : 1) + " %) were not the expected " +
                           describe(o.expected_statuses) + " (allowed: " +
                           format_fixed(o.max_unexpected_percent, o.max_unexpected_percent < 10 ? 2 : 1) +
                           " %); first: " + first.first_unexpected;
        if (!first.unexpected_hint.empty())
            line += "; hint: " + first.unexpected_hint;
        f.push_back(std::move(line));
    }
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
        add(f,
            "no replay was checked: no key got a recorded first answer and a second answer (see the status "
            "counts)");
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
                    std::to_string(r.warmup.timeouts + r.timed.timeouts) + ")" +
                    example(r.warmup.first_error.empty() ? r.timed.first_error : r.warmup.first_error));
    std::string_view stopped;
    if (r.warmup.stopped_early || (r.warmed_up && r.timed.answers == 0 && r.warmup.unexpected))
        stopped =
            "stopped after the warm-up: nearly every answer was unexpected, so the timed phase was not run";
    else if (r.timed.stopped_early)
        stopped = "the timed phase stopped early: nearly every one of its first answers was unexpected";
    else if (r.timed.answers == 0)
        stopped = "the timed phase got no answer at all";
    if (!stopped.empty())
        add(f, stopped);
    threshold_inputs in{&r.timed.latency, r.timed.answers, r.timed.seconds, r.timed.errors(),
                        c.replays_mismatched};
    r.threshold_results.clear();
    for (const auto& t : o.thresholds) {
        auto result = evaluate(t, in);
        if (!result.pass)
            f.push_back("threshold " + t.text + " failed: " + result.observed_text);
        r.threshold_results.push_back(std::move(result));
    }
    if (r.metrics_before && r.metrics_after) {
        double executed = r.metrics_after->outcome("executed") - r.metrics_before->outcome("executed");
        if (executed != static_cast<double>(r.expected_executions))
            f.push_back("the gateway executed " + format_fixed(executed, 0) + " requests upstream for " +
                        std::to_string(r.expected_executions) +
                        " keys this run executed (its metrics; another client's traffic counts too)");
    }
}

} // namespace idemgate::loadtest
