// SPDX-License-Identifier: Apache-2.0
// --report: a real run against the real gateway (memory store) writes a page, and a real browser
// (headless Chromium, run_in_chromium) loads it: one <svg> per chart with its paths, no console
// message, the command line escaped, a screenshot.
#include "loadtest_harness.hpp"

#include <algorithm>
#include <fstream>
#include <idemgate/test/chromium.hpp>
#include <set>
#include <unistd.h>

using namespace loadtest_harness;

namespace {

struct browser_run {
    std::string dom;            // the page's DOM, serialized
    boost::json::array console; // what the pages logged: console messages, exceptions, log entries
    double shot_width = 0;      // the screenshot's width in CSS pixels
};

// Opens `control` (a page that logs one console error), then the report `page`, in headless
// Chromium (run_in_chromium); takes the report's DOM and a screenshot of it into `screenshot`.
browser_run open_in_chromium(const std::string& control, const std::string& page,
                             const std::string& screenshot)
{
    boost::json::array steps{
        boost::json::object{{"op", "goto"}, {"url", "file://" + control}},
        boost::json::object{{"op", "goto"}, {"url", "file://" + page}},
        boost::json::object{{"op", "eval"}, {"js", "document.documentElement.outerHTML"}},
        boost::json::object{{"op", "screenshot"}, {"path", screenshot}},
    };
    // install-deps installs Chromium with everything the tests need: its absence is a failure.
    auto run = run_in_chromium(boost::json::serialize(steps), 120s);
    INFO(run.output);
    REQUIRE_MESSAGE(run.exit_status.has_value(), "chromium did not run");
    REQUIRE(*run.exit_status == 0);
    REQUIRE(run.steps.size() == steps.size());
    browser_run out;
    out.dom = boost::json::parse(run.steps[2]).at("value").as_string();
    out.shot_width = boost::json::parse(run.steps[3]).at("value").at("width").to_number<double>();
    out.console = boost::json::parse(run.console).as_array();
    return out;
}

// The value of attribute `name` in the element starting at `at`.
std::string attribute(const std::string& html, std::size_t at, const std::string& name)
{
    auto end = html.find('>', at);
    auto found = html.find(" " + name + "=\"", at);
    if (found == std::string::npos || found > end)
        return "";
    auto from = found + name.size() + 3;
    return html.substr(from, html.find('"', from) - from);
}

struct chart {
    std::string name;
    std::vector<std::pair<std::string, std::string>> paths; // class, d
};

std::vector<chart> charts_of(const std::string& dom)
{
    std::vector<chart> out;
    for (auto at = dom.find("<svg"); at != std::string::npos; at = dom.find("<svg", at + 1)) {
        chart c{attribute(dom, at, "data-chart"), {}};
        auto end = dom.find("</svg>", at);
        for (auto p = dom.find("<path", at); p != std::string::npos && p < end; p = dom.find("<path", p + 1))
            c.paths.emplace_back(attribute(dom, p, "class"), attribute(dom, p, "d"));
        out.push_back(std::move(c));
    }
    return out;
}

std::size_t count_of(const std::string& text, char c)
{
    return static_cast<std::size_t>(std::count(text.begin(), text.end(), c));
}

} // namespace

TEST_SUITE("loadtest report")
{

    TEST_CASE("--report: Chromium renders one chart per figure with its paths, no console message, the "
              "command line escaped")
    {
        loadtest_setup s;
        temp_dir dir;
        auto page = dir.path() + "/run.html";
        const std::string note = "X-Note: <img src=x onerror=alert(1)> & 'q'";
        auto r = run_loadtest({s.url("/api/orders"),
                               "--keys",
                               "20",
                               "-c",
                               "4",
                               "-d",
                               "1200ms",
                               "--interval",
                               "200ms",
                               "-H",
                               note,
                               "--threshold",
                               "p99<10s",
                               "--threshold",
                               "rps>1",
                               "--metrics",
                               s.metrics_url(),
                               "--report",
                               page,
                               "--json"});
        INFO(r.output);
        REQUIRE(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        auto rows = r.summary.at("series").as_array().size();
        REQUIRE(rows >= 3);

        auto html = read_all(page);
        REQUIRE(!html.empty());
        // Self-contained: nothing to fetch, nothing to run (the command line, text, set apart).
        auto cmd_at = html.find("<pre class=\"cmd\">");
        REQUIRE(cmd_at != std::string::npos);
        auto markup = html.substr(0, cmd_at) + html.substr(html.find("</pre>", cmd_at));
        for (std::string fetches :
             {"<script", "<link", " src=", " href=", "url(", "@import", "<img", "<iframe"})
            CHECK_MESSAGE(!contains(markup, fetches), "the page holds " << fetches);
        // The command line, quoted for a shell and escaped for HTML.
        CHECK(contains(html, "--report " + page));
        CHECK(
            contains(html, "&#39;X-Note: &lt;img src=x onerror=alert(1)&gt; &amp; &#39;\\&#39;&#39;q&#39;"));

        // A page that does log to the console, opened first, shows that the log is read the way it
        // is written: its message is the only one.
        auto control =
            dir.write_file("control.html", "<!DOCTYPE html><title>c</title><script>console.error('control-"
                                           "message')</script>");
        auto shot = dir.path() + "/report.png";
        auto b = open_in_chromium(control, page, shot);
        INFO(boost::json::serialize(b.console));
        REQUIRE(b.console.size() == 1);
        CHECK(b.console[0].at("kind") == "console.error");
        CHECK(b.console[0].at("text") == "control-message");
        // Rendered, the escaped command line is text, not an element.
        CHECK(contains(b.dom, "X-Note: &lt;img src=x onerror=alert(1)&gt; &amp; "));
        CHECK(!contains(b.dom, "<img"));

        auto charts = charts_of(b.dom);
        std::set<std::string> names;
        for (const auto& c : charts) {
            INFO(c.name);
            names.insert(c.name);
            REQUIRE(!c.paths.empty());
            for (const auto& [css, d] : c.paths) {
                INFO(css);
                CHECK(d.size() > 4);
                CHECK(d.front() == 'M');
                CHECK(d.find_first_of("0123456789") != std::string::npos);
            }
        }
        CHECK(charts.size() == 5);
        CHECK(names ==
              std::set<std::string>{"throughput", "latency", "distribution", "percentiles", "status"});
        // One step per interval of the series: the req/s line has one horizontal run per row, and
        // the latency chart a p50, a p99 and a max line.
        for (const auto& c : charts) {
            for (const auto& [css, d] : c.paths)
                if (css == "line s-rps")
                    CHECK(count_of(d, 'H') == rows);
            if (c.name == "latency")
                CHECK(c.paths.size() == 3);
            if (c.name == "status") // every answer a 201: one layer
                CHECK(c.paths.size() == 1);
        }
        // The figures of the run, the checks and the verdict.
        CHECK(contains(b.dom, std::to_string(int_at(r.summary, {"answers"})) + " in "));
        CHECK(contains(b.dom, "p99&lt;10s"));
        CHECK(contains(b.dom, "rps&gt;1"));
        CHECK(contains(b.dom, "verdict pass"));
        CHECK(contains(b.dom, "<th>replays checked</th><td>" +
                                  std::to_string(int_at(r.summary, {"checks", "replays_checked"})) +
                                  "</td>"));

        // The screenshot: a PNG of the page's width.
        auto png = read_all(shot);
        REQUIRE(png.size() > 24);
        CHECK(png.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0);
        auto width = (static_cast<unsigned char>(png[16]) << 24) |
                     (static_cast<unsigned char>(png[17]) << 16) |
                     (static_cast<unsigned char>(png[18]) << 8) | static_cast<unsigned char>(png[19]);
        CHECK(width == static_cast<unsigned>(b.shot_width));
        CHECK(width >= 1000);
        CHECK(png.size() > 20000); // charts and text, not a blank page
    }

    TEST_CASE("--report: a failed run's page says FAIL and names the threshold; a bad path stops the run")
    {
        loadtest_setup s;
        temp_dir dir;
        auto page = dir.path() + "/failed.html";
        auto r = run_loadtest(
            {s.url("/api/orders"), "--keys", "5", "-n", "100", "--threshold", "p50<1ns", "--report", page});
        INFO(r.output);
        CHECK(r.exit_status == 1);
        CHECK(contains(r.output, "report       " + page));
        auto html = read_all(page);
        CHECK(contains(html, "verdict fail\">FAIL"));
        CHECK(contains(html, "threshold p50&lt;1ns failed: "));

        auto wrong = run_loadtest({s.url("/api/orders"), "-n", "10", "--report", dir.path() + "/r.txt"});
        CHECK(wrong.exit_status == 2);
        CHECK(contains(wrong.output, "--report"));
        auto unwritable =
            run_loadtest({s.url("/api/orders"), "-n", "10", "--report", dir.path() + "/missing/r.html"});
        CHECK(unwritable.exit_status == 2);
        CHECK(contains(unwritable.output, "--report: cannot write"));
        // An unreachable target: nothing ran, no page is left behind.
        auto gone = dir.path() + "/gone.html";
        auto refused = run_loadtest(
            {"http://127.0.0.1:" + std::to_string(free_port()) + "/x", "-n", "5", "--report", gone});
        CHECK(refused.exit_status == 2);
        CHECK(::access(gone.c_str(), F_OK) != 0);
        CHECK(s.upstream.executions() == 5); // the failed run's warm-up, nothing after
    }

} // TEST_SUITE
