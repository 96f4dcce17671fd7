// SPDX-License-Identifier: Apache-2.0
// The time series, the thresholds and the workloads beyond one URL: their parsers and math
// without sockets, then the real binary against the real gateway (memory store).
#include "loadtest_harness.hpp"

#include <cmath>
#include <fstream>
#include <idemgate/loadtest/options.hpp>
#include <idemgate/loadtest/report.hpp>
#include <idemgate/loadtest/series.hpp>
#include <idemgate/loadtest/threshold.hpp>
#include <sstream>

using namespace loadtest_harness;
namespace lt = idemgate::loadtest;

namespace {

std::vector<std::string> lines_of(const std::string& text)
{
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        if (!line.empty())
            out.push_back(line);
    return out;
}

std::string refusal(std::vector<std::string> args)
{
    try {
        lt::parse_options(args);
    } catch (const lt::usage_error& e) {
        return e.what();
    }
    return "accepted";
}

} // namespace

TEST_SUITE("loadtest parts")
{

    TEST_CASE("thresholds: parsed, judged, and refused when malformed")
    {
        std::string error;
        auto t = lt::parse_threshold("p99<5ms", error);
        REQUIRE(t);
        CHECK(t->what == lt::threshold::figure::percentile);
        CHECK(t->percentile == 99);
        CHECK(t->bound == 5e6);
        lt::log_histogram h;
        for (std::uint64_t us = 1; us <= 1000; ++us)
            h.record(us * 1000); // 1us .. 1ms
        lt::threshold_inputs in{&h, 1000, 0.5, 1, 0};
        CHECK(lt::evaluate(*t, in).pass);
        CHECK(!lt::evaluate(*lt::parse_threshold("p99<1us", error), in).pass);
        CHECK(lt::evaluate(*lt::parse_threshold("p50<=600us", error), in).pass);
        CHECK(!lt::evaluate(*lt::parse_threshold("max<900us", error), in).pass);
        CHECK(lt::evaluate(*lt::parse_threshold("p99.9<2ms", error), in).pass);
        CHECK(lt::evaluate(*lt::parse_threshold("rps>1999", error), in).pass); // 1000 in 0.5 s
        CHECK(!lt::evaluate(*lt::parse_threshold("rps>2001", error), in).pass);
        CHECK(lt::evaluate(*lt::parse_threshold("errors<0.1%", error), in).pass); // 1 of 1001
        CHECK(!lt::evaluate(*lt::parse_threshold("errors<0.09%", error), in).pass);
        CHECK(lt::evaluate(*lt::parse_threshold("errors<5", error), in).pass);
        CHECK(!lt::evaluate(*lt::parse_threshold("errors==0", error), in).pass);
        CHECK(lt::evaluate(*lt::parse_threshold("mismatches==0", error), in).pass);
        in.mismatches = 2;
        CHECK(!lt::evaluate(*lt::parse_threshold("mismatches==0", error), in).pass);
        for (auto bad : {"p99", "p99<5", "p99<5parsecs", "p0<1ms", "p101<1ms", "latency<1ms", "rps>fast",
                         "errors<-1", "errors<101%", "mismatches=0", "<5ms", "rps>"}) {
            CAPTURE(bad);
            CHECK(!lt::parse_threshold(bad, error));
            CHECK(error.find(bad) != std::string::npos);
        }
        auto message = refusal({"http://h/", "--threshold", "p99<5"});
        CHECK(message.find("--threshold") != std::string::npos);
        CHECK(message.find("p99<5") != std::string::npos);
    }

    TEST_CASE("stages: parsed, and the send time of request n follows the ramps")
    {
        auto stages = lt::parse_stages("1s:100,2s:100,1s:0");
        REQUIRE(stages.size() == 3);
        CHECK(lt::stage_requests(stages) == doctest::Approx(50 + 200 + 50));
        CHECK(*lt::stage_offset_seconds(stages, 0) == 0);
        // Ramp up 0 -> 100 over 1 s: n requests by t = sqrt(n / 50).
        CHECK(*lt::stage_offset_seconds(stages, 12.5) == doctest::Approx(0.5));
        CHECK(*lt::stage_offset_seconds(stages, 50) == doctest::Approx(1.0));
        CHECK(*lt::stage_offset_seconds(stages, 150) == doctest::Approx(2.0)); // flat at 100/s
        // Ramp down 100 -> 0: 37.5 requests in its first half second.
        CHECK(*lt::stage_offset_seconds(stages, 287.5) == doctest::Approx(3.5));
        CHECK(!lt::stage_offset_seconds(stages, 300));
        double previous = -1;
        for (double n = 0; n < 300; n += 1) {
            double at = *lt::stage_offset_seconds(stages, n);
            REQUIRE(at >= previous);
            previous = at;
        }
        auto o = lt::parse_options({"--url", "http://h/", "--stages", "10s:1000,30s:5000"});
        CHECK(o.duration == std::chrono::seconds(40));
        for (auto bad : {"10s", "10s:", "x:5", "10s:-1", "10s:5,", "1s:0"})
            CHECK(refusal({"http://h/", "--stages", bad}).find("--stages") != std::string::npos);
        CHECK(refusal({"http://h/", "--stages", "1s:5", "--rate", "5"}).find("--stages") !=
              std::string::npos);
        CHECK(refusal({"http://h/", "--stages", "1s:5", "-d", "5s"}).find("--stages") != std::string::npos);
    }

    TEST_CASE("targets, a positional URL, wrk's and oha's short flags, --body @FILE, the series' options")
    {
        temp_dir dir;
        auto body = dir.write_file("body.json", "{\"from\":\"file\"}\n");
        auto targets = dir.write_file("targets.txt", "# orders\nPOST http://h:81/api/a @" + body +
                                                         " 3\n\n  PUT http://h:81/api/b\n");
        auto o = lt::parse_options({"--targets", targets, "--target", "GET http://h:81/api/c 2"});
        REQUIRE(o.targets.size() == 3);
        CHECK(o.targets[0].method == "POST");
        CHECK(o.targets[0].url.target == "/api/a");
        CHECK(o.targets[0].body == "{\"from\":\"file\"}\n");
        CHECK(o.targets[0].weight == 3);
        CHECK(o.targets[1].weight == 1);
        CHECK(!o.targets[1].body);
        CHECK(o.targets[2].weight == 2);
        CHECK(o.url.port == "81");
        CHECK(refusal({"--target", "POST http://h:81/a", "--target", "POST http://other:81/b"})
                  .find("one origin") != std::string::npos);
        CHECK(refusal({"--target", "POST http://h/a 0"}).find("--target") != std::string::npos);
        CHECK(refusal({"--target", "POST"}).find("--target") != std::string::npos);
        CHECK(refusal({"--target", "POST http://h/a @/nonexistent/x"}).find("cannot read") !=
              std::string::npos);
        CHECK(refusal({"--targets", "/nonexistent/t"}).find("--targets") != std::string::npos);
        CHECK(refusal({"http://h/", "--target", "POST http://h/a"}).find("--target") != std::string::npos);

        o = lt::parse_options({"http://127.0.0.1:9/api", "-c", "3", "-t", "1", "-n", "7", "-R", "50", "-H",
                               "A: b", "--body", "@" + body});
        CHECK(o.url.port == "9");
        CHECK(o.connections == 3);
        CHECK(o.threads == 1);
        CHECK(o.requests == 7u);
        CHECK(o.rate == 50);
        CHECK(o.body == "{\"from\":\"file\"}\n");
        o = lt::parse_options({"-c8", "-d2s", "-HX-A: 1", "http://h/"});
        CHECK(o.connections == 8);
        CHECK(o.duration == std::chrono::seconds(2));
        CHECK(o.headers.size() == 1);
        CHECK(lt::parse_options({"https://h/", "-k"}).insecure);
        CHECK(refusal({"http://h/", "http://h/b"}).find("twice") != std::string::npos);
        CHECK(refusal({"http://h/", "--body", "@/nonexistent/b"}).find("--body") != std::string::npos);

        o = lt::parse_options({"http://h/", "--interval", "250ms", "--series", "s.csv"});
        CHECK(o.interval == std::chrono::milliseconds(250));
        CHECK(o.series_fmt == lt::series_format::csv);
        CHECK(lt::parse_options({"http://h/", "--series", "s.ndjson"}).series_fmt ==
              lt::series_format::ndjson);
        CHECK(refusal({"http://h/", "--series", "s.txt"}).find("--series") != std::string::npos);
        CHECK(refusal({"http://h/", "--interval", "10ms"}).find("--interval") != std::string::npos);
    }

    TEST_CASE("series rows: an interval window drains, CSV and JSON carry the same figures")
    {
        lt::interval_window w;
        w.answer(1000, 200);
        w.answer(3000, 201);
        w.answer(2000, 404);
        w.answer(9000, 503);
        w.error();
        lt::log_histogram h;
        std::array<std::uint64_t, 6> classes{};
        std::uint64_t errors = 0;
        w.drain(h, classes, errors);
        CHECK(h.count() == 4);
        CHECK(classes[2] == 2);
        CHECK(classes[4] == 1);
        CHECK(classes[5] == 1);
        CHECK(errors == 1);
        w.drain(h, classes, errors); // drained: nothing more
        CHECK(h.count() == 4);
        lt::series_row row;
        row.t_s = 1;
        row.interval_s = 1;
        row.answers = 4;
        row.rps = 4;
        row.status_class = classes;
        row.errors = errors;
        row.executions = 3;
        auto j = lt::series_row_json(row);
        CHECK(j.at("2xx").as_uint64() == 2);
        CHECK(j.at("executions").as_double() == 3);
        auto header = lt::series_csv_header();
        auto line = lt::series_csv_line(row);
        CHECK(std::count(header.begin(), header.end(), ',') == std::count(line.begin(), line.end(), ','));
        CHECK(line.find("4,4.0,") != std::string::npos);
        CHECK(line.back() == '\n');
        // The live line shows the interval's figures too.
        lt::progress_figures f{1.0, 2.0, 4, 4.0, 0, 1, 0, &row};
        auto live = lt::progress_line("replay", f);
        for (auto part : {"4 answers", "2xx 2 4xx 1 5xx 1 err 1", "executions 3", "p99 "})
            CHECK(live.find(part) != std::string::npos);
    }

} // TEST_SUITE

TEST_SUITE("loadtest workloads")
{

    TEST_CASE("--series writes a row per interval (CSV and NDJSON) that sums to the run; --json embeds it")
    {
        loadtest_setup s;
        temp_dir dir;
        auto csv = dir.path() + "/series.csv";
        auto r = run_loadtest({s.url("/api/orders"), "--keys", "20", "-c", "4", "-d", "1s", "--interval",
                               "250ms", "--series", csv, "--metrics", s.metrics_url(), "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        const auto& series = r.summary.at("series").as_array();
        CHECK(series.size() >= 3);
        CHECK(series.size() <= 6);
        std::int64_t answers = 0, checked = 0, twoxx = 0;
        for (const auto& row : series) {
            answers += int_at(row.as_object(), {"answers"});
            checked += int_at(row.as_object(), {"replays_checked"});
            twoxx += int_at(row.as_object(), {"2xx"});
            CHECK(row.as_object().at("p99_us").as_double() >= row.as_object().at("p50_us").as_double());
            // Executions so far: the warm-up executed the 20 keys; the timed phase only replays them.
            CHECK(int_at(row.as_object(), {"executions"}) == 20);
        }
        CHECK(answers == int_at(r.summary, {"answers"}));
        CHECK(twoxx == answers);
        CHECK(checked == int_at(r.summary, {"checks", "replays_checked"}));
        auto rows = lines_of(read_all(csv));
        REQUIRE(rows.size() == series.size() + 1);
        CHECK(rows[0].rfind("t_s,interval_s,answers,rps,p50_us", 0) == 0);

        auto ndjson = dir.path() + "/series.ndjson";
        auto first = run_loadtest({s.url("/api/orders"), "--mode", "first", "-c", "2", "-d", "600ms",
                                   "--interval", "200ms", "--series", ndjson, "--metrics", s.metrics_url()});
        INFO(first.output);
        CHECK(first.exit_status == 0);
        CHECK(first.output.find("rows of 200.0ms in " + ndjson) != std::string::npos);
        auto lines = lines_of(read_all(ndjson));
        REQUIRE(lines.size() >= 2);
        // First executions: the gateway's count so far grows row by row.
        std::int64_t previous = -1;
        for (const auto& line : lines) {
            auto row = json::parse(line).as_object();
            auto executions = int_at(row, {"executions"});
            CHECK(executions >= previous);
            previous = executions;
        }
        CHECK(previous > 0);
        // On a terminal (script(1) gives it one) the live line shows the interval's figures too.
        child_process tty("/usr/bin/script",
                          {"-qec",
                           bin_dir() + "/idemgate-loadtest " + s.url("/api/orders") +
                               " --keys 5 -c 2 -d 900ms --interval 300ms --metrics " + s.metrics_url(),
                           "/dev/null"});
        REQUIRE(tty.wait_exit(60s).has_value());
        INFO(tty.output());
        CHECK(tty.output().find("\x1b[K") != std::string::npos);
        for (auto part : {"| p50 ", " p99 ", " max ", "2xx ", " 5xx 0 err 0", "replays ", "executions 5"})
            CHECK(tty.output().find(part) != std::string::npos);

        auto bad = run_loadtest({s.url("/api/orders"), "--series", dir.path() + "/no/such/dir/s.csv"});
        CHECK(bad.exit_status == 2);
        CHECK(bad.output.find("--series") != std::string::npos);
    }

    TEST_CASE("--threshold: kept ones pass, a broken one fails the run naming it, a malformed one exits 2")
    {
        loadtest_setup s;
        auto pass = run_loadtest({s.url("/api/orders"),
                                  "--keys",
                                  "10",
                                  "-c",
                                  "2",
                                  "-n",
                                  "200",
                                  "--threshold",
                                  "p99<10s",
                                  "--threshold",
                                  "p50<10s",
                                  "--threshold",
                                  "max<10s",
                                  "--threshold",
                                  "rps>1",
                                  "--threshold",
                                  "errors<0.1%",
                                  "--threshold",
                                  "errors<5",
                                  "--threshold",
                                  "mismatches==0"});
        INFO(pass.output);
        CHECK(pass.exit_status == 0);
        CHECK(pass.output.find("threshold    p99<10s  pass") != std::string::npos);
        CHECK(pass.output.find("threshold    mismatches==0  pass") != std::string::npos);
        CHECK(pass.output.find("result       PASS") != std::string::npos);

        auto fail = run_loadtest({s.url("/api/orders"), "--keys", "10", "-c", "2", "-n", "200", "--threshold",
                                  "p99<1us", "--threshold", "rps>1", "--json"});
        INFO(fail.output);
        CHECK(fail.exit_status == 1);
        REQUIRE(!fail.summary.empty());
        const auto& results = fail.summary.at("thresholds").as_array();
        REQUIRE(results.size() == 2);
        CHECK(!results[0].as_object().at("pass").as_bool());
        CHECK(results[1].as_object().at("pass").as_bool());
        CHECK(
            fail.summary.at("failures").as_array().at(0).as_string().starts_with("threshold p99<1us failed"));

        // Straight at the upstream every replay differs: mismatches==0 breaks.
        auto upstream = run_loadtest({"http://" + s.upstream.address() + "/api/orders", "--keys", "5", "-c",
                                      "2", "-n", "20", "--threshold", "mismatches==0"});
        CHECK(upstream.exit_status == 1);
        CHECK(upstream.output.find("threshold mismatches==0 failed: 20") != std::string::npos);

        auto malformed = run_loadtest({s.url("/api/orders"), "--threshold", "p99<5"});
        CHECK(malformed.exit_status == 2);
        CHECK(malformed.output.find("--threshold: \"p99<5\"") != std::string::npos);
    }

    TEST_CASE("--targets with weights and @BODY, --body @FILE, a positional URL and short flags")
    {
        loadtest_setup s;
        temp_dir dir;
        auto body = dir.write_file("order.json", "{\"order\":\"from a file\"}");
        auto targets = dir.write_file("targets.txt", "POST " + s.url("/api/a") + " @" + body + " 3\nPOST " +
                                                         s.url("/api/b") + " 1\n");
        auto r = run_loadtest({"--targets", targets, "--mode", "first", "-c", "4", "-t", "1", "-n", "400",
                               "--metrics", s.metrics_url(), "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        const auto& t = r.summary.at("targets").as_array();
        REQUIRE(t.size() == 2);
        auto a = int_at(t[0].as_object(), {"answers"}), b = int_at(t[1].as_object(), {"answers"});
        CHECK(a + b == 400);
        CHECK(b >= 60); // weight 1 of 4: about 100
        CHECK(b <= 140);
        CHECK(s.upstream.executions() == 400);

        // --target repeated, in an open loop (-R): a replay run, every key's replays on its target.
        auto open =
            run_loadtest({"--target", "POST " + s.url("/api/a"), "--target", "POST " + s.url("/api/b") + " 2",
                          "--keys", "12", "-c", "2", "-R", "400", "-n", "60", "--json"});
        INFO(open.output);
        CHECK(open.exit_status == 0);
        REQUIRE(!open.summary.empty());
        const auto& ot = open.summary.at("targets").as_array();
        REQUIRE(ot.size() == 2);
        CHECK(int_at(ot[0].as_object(), {"answers"}) + int_at(ot[1].as_object(), {"answers"}) == 60);
        CHECK(int_at(ot[0].as_object(), {"answers"}) > 0);
        CHECK(int_at(ot[1].as_object(), {"answers"}) > 0);
        CHECK(int_at(open.summary, {"checks", "replays_checked"}) == 60);

        // --body @FILE: the gateway replays the key's answer to a request with the file's bytes (the
        // same fingerprint), and the test upstream's echo of that body is in it.
        auto replay = run_loadtest({s.url("/api/orders"), "--keys", "1", "-c", "1", "-n", "3", "--key-prefix",
                                    "from-file", "-X", "POST", "--body", "@" + body,
                                    "-HContent-Type: application/json"});
        INFO(replay.output);
        CHECK(replay.exit_status == 0);
        auto res = http_request(s.gateway->port(), "POST", "/api/orders",
                                {{"Idempotency-Key", "from-file-0"}, {"Content-Type", "application/json"}},
                                "{\"order\":\"from a file\"}");
        CHECK(res.status == 201);
        CHECK(res.headers.count("idempotent-replayed") == 1);
        CHECK(res.body.find("from a file") != std::string::npos);
    }

    TEST_CASE("--stages ramps the open loop: the requests the ramps add up to, rising row by row")
    {
        loadtest_setup s;
        // 0 -> 200/s over 0.5 s (50 requests), then 200/s for 0.5 s (100): 150 in all.
        auto r = run_loadtest({s.url("/api/orders"), "--keys", "10", "-c", "4", "--stages",
                               "500ms:200,500ms:200", "--interval", "250ms", "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        CHECK(r.summary.at("loop").as_string() == "open");
        CHECK(r.summary.at("stages").as_array().size() == 2);
        CHECK(int_at(r.summary, {"answers"}) == 150);
        const auto& series = r.summary.at("series").as_array();
        REQUIRE(series.size() >= 3);
        // Due in the first quarter: 12.5; in the third: 50.
        CHECK(int_at(series[0].as_object(), {"answers"}) < int_at(series[2].as_object(), {"answers"}));
        auto bad = run_loadtest({s.url("/api/orders"), "--stages", "1s:10", "--rate", "5"});
        CHECK(bad.exit_status == 2);
        CHECK(bad.output.find("--stages") != std::string::npos);
    }

} // TEST_SUITE
