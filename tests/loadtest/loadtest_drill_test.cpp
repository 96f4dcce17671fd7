// SPDX-License-Identifier: Apache-2.0
// The failover drill's short version (docs/guide/load-testing.md, "A failover drill"): the real
// load tester runs in open loop against the real gateway while the gateway reloads its
// configuration (SIGHUP) in the middle of the run. No answer is lost, no key executes twice, and
// the time series shows the interval the reload fell in, answered like the others.
#include "loadtest_harness.hpp"

#include <csignal>
#include <doctest/doctest.h>
#include <fstream>
#include <string>

using namespace loadtest_harness;

namespace {

// The rows of an NDJSON series written so far (a row is a line once it is flushed).
std::vector<json::object> series_rows(const std::string& path)
{
    std::vector<json::object> rows;
    std::ifstream in(path);
    for (std::string line; std::getline(in, line);) {
        boost::system::error_code ec;
        auto v = json::parse(line, ec);
        if (!ec && v.is_object())
            rows.push_back(v.as_object());
    }
    return rows;
}

} // namespace

TEST_SUITE_BEGIN("loadtest drill");

TEST_CASE("a reload in the middle of an open-loop run: every request answered, no key executed twice, "
          "the series shows the interval")
{
    loadtest_setup s;
    temp_dir dir;
    const auto series = dir.path() + "/run.ndjson";
    // 3 s at 300 requests/s, half of them replays of 100 warm keys, the rest new keys; a row every
    // 500 ms. The tester reads the gateway's executions before and after (--metrics).
    const std::vector<std::string> args{s.url("/api/orders"),
                                        "--mode",
                                        "mixed:50",
                                        "--keys",
                                        "100",
                                        "-c",
                                        "8",
                                        "--rate",
                                        "300",
                                        "-d",
                                        "3s",
                                        "--interval",
                                        "500ms",
                                        "--series",
                                        series,
                                        "--body",
                                        "{\"order\":\"{key}\"}",
                                        "--metrics",
                                        s.metrics_url(),
                                        "--json"};
    child_process run(bin_dir() + "/idemgate-loadtest", args);

    // The reload comes once the timed phase has 1 s of rows: the /plain/ route becomes /fresh/.
    wait_until(
        "two rows of the series", 20s, [&] { return series_rows(series).size() >= 2; }, 10ms);
    const auto path = s.gateway->config_path();
    std::string text;
    {
        std::ifstream in(path);
        text.assign(std::istreambuf_iterator<char>(in), {});
    }
    auto at = text.find("path_prefix: \"/plain/\"");
    REQUIRE(at != std::string::npos);
    text.replace(at, std::string("path_prefix: \"/plain/\"").size(), "path_prefix: \"/fresh/\"");
    std::ofstream(path, std::ios::trunc) << text;
    s.gateway->process().signal(SIGHUP);
    wait_until(
        "the reload is applied", 10s,
        [&] { return metric(s.gateway->admin_port(), "idemgate_config_reloads_total{result=\"ok\"}") == 1; },
        10ms);
    // The reload fell in the row after the ones written by now (the last may still be open).
    const auto rows_before = series_rows(series).size();
    CHECK(http_request(s.gateway->port(), "POST", "/fresh/x", {}, {}).status == 201);

    auto status = run.wait_exit(60s);
    REQUIRE(status.has_value());
    std::string summary_line;
    for (const auto& line : run.lines())
        if (!line.empty() && line.front() == '{')
            summary_line = line;
    INFO(run.output());
    CHECK(*status == 0); // every check of the tester passed
    REQUIRE(!summary_line.empty());
    const auto summary = json::parse(summary_line).as_object();

    // No answer lost: every request sent got an answer, none failed on the way.
    const auto answers = int_at(summary, {"answers"});
    CHECK(answers >= 800);
    CHECK(int_at(summary, {"errors", "connect"}) == 0);
    CHECK(int_at(summary, {"errors", "write"}) == 0);
    CHECK(int_at(summary, {"errors", "read"}) == 0);
    CHECK(int_at(summary, {"errors", "timeout"}) == 0);
    CHECK(int_at(summary, {"status", "201"}) == answers);
    CHECK(int_at(summary, {"checks", "keys_without_answer"}) == 0);
    // No key twice: the gateway executed exactly the new keys, and every replay was the first answer.
    CHECK(int_at(summary, {"checks", "keys_executed_more_than_once"}) == 0);
    CHECK(int_at(summary, {"checks", "replays_mismatched"}) == 0);
    CHECK(int_at(summary, {"checks", "replays_unmarked"}) == 0);
    CHECK(int_at(summary, {"executions", "gateway", "executed"}) ==
          int_at(summary, {"executions", "keys_executed"}));

    // The series: the reload's interval is inside the run and was answered like every other.
    const auto rows = series_rows(series);
    REQUIRE(rows.size() >= 5);
    CHECK(rows_before >= 2);
    CHECK(rows_before < rows.size());
    std::int64_t in_rows = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        INFO("row " << i << ": " << json::serialize(rows[i]));
        in_rows += int_at(rows[i], {"answers"});
        CHECK(int_at(rows[i], {"errors"}) == 0);
        if (i + 1 < rows.size()) // the last row may be a few milliseconds long
            CHECK(int_at(rows[i], {"answers"}) > 0);
    }
    CHECK(in_rows == answers);
}

TEST_SUITE_END();
