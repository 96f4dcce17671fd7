// SPDX-License-Identifier: Apache-2.0
// The /metrics formats without a gateway: which one an Accept header asks for, the text format
// rewritten as OpenMetrics, and the histograms' exemplars (also under concurrent writers: a
// reader never sees one request's trace ID with another's value).
#include <atomic>
#include <chrono>
#include <doctest/doctest.h>
#include <idemgate/common/histogram.hpp>
#include <idemgate/common/prometheus.hpp>
#include <set>
#include <string>
#include <thread>
#include <vector>

using namespace idemgate;
using prometheus::exposition;

TEST_CASE("negotiate: OpenMetrics when asked for at least as much as text")
{
    CHECK(prometheus::negotiate("") == exposition::text);
    CHECK(prometheus::negotiate("*/*") == exposition::text);
    CHECK(prometheus::negotiate("text/plain;version=0.0.4") == exposition::text);
    CHECK(prometheus::negotiate("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1") ==
          exposition::openmetrics);
    CHECK(prometheus::negotiate("Application/OpenMetrics-Text") == exposition::openmetrics);
    CHECK(prometheus::negotiate("application/openmetrics-text; version=1.0.0; q=0.2, text/plain") ==
          exposition::text);
    CHECK(prometheus::negotiate("application/openmetrics-text;q=0") == exposition::text);
    CHECK(prometheus::negotiate("application/openmetrics-text;version=2.0.0") == exposition::text);
    CHECK(prometheus::content_type(exposition::openmetrics) ==
          "application/openmetrics-text; version=1.0.0; charset=utf-8");
}

TEST_CASE("to_openmetrics: counters named without _total, canonical le, escaped HELP, # EOF")
{
    std::string text;
    prometheus::header(text, "x_requests_total", "counter", "Requests \"seen\".");
    prometheus::sample(text, "x_requests_total", "code=\"2xx\"", 3);
    prometheus::header(text, "x_odd", "counter", "A counter without the suffix.");
    prometheus::sample(text, "x_odd", "", 1);
    prometheus::header(text, "x_up", "gauge", "Up.");
    prometheus::sample(text, "x_up", "", 1);
    latency_histogram h;
    h.observe(std::chrono::milliseconds(2));
    prometheus::header(text, "x_seconds", "histogram", "Latency.");
    h.render(text, "x_seconds", "route=\"/a\"");
    auto om = prometheus::to_openmetrics(text);
    CHECK(om.find("# HELP x_requests Requests \\\"seen\\\".\n# TYPE x_requests counter\n"
                  "x_requests_total{code=\"2xx\"} 3\n") != std::string::npos);
    CHECK(om.find("# TYPE x_odd counter\nx_odd_total 1\n") != std::string::npos);
    CHECK(om.find("# TYPE x_up gauge\nx_up 1\n") != std::string::npos);
    CHECK(om.find("x_seconds_bucket{route=\"/a\",le=\"1.0\"} 1\n") != std::string::npos);
    CHECK(om.find("x_seconds_bucket{route=\"/a\",le=\"0.0025\"} 1\n") != std::string::npos);
    CHECK(om.find("x_seconds_bucket{route=\"/a\",le=\"+Inf\"} 1\n") != std::string::npos);
    CHECK(om.ends_with("x_seconds_count{route=\"/a\"} 1\n# EOF\n"));
    CHECK(text.find("le=\"1\"") != std::string::npos); // the text format unchanged
}

TEST_CASE("exemplars: a bucket's last traced observation, only when asked for")
{
    latency_histogram h;
    latency_histogram::trace_id trace{};
    for (std::size_t i = 0; i < trace.size(); ++i)
        trace[i] = static_cast<std::uint8_t>(i + 1);
    h.observe(std::chrono::milliseconds(3), &trace);
    h.observe(std::chrono::milliseconds(4)); // no trace: the exemplar stays
    std::string plain, with;
    h.render(plain, "x", "");
    h.render(with, "x", "", true);
    CHECK(plain.find(" # {") == std::string::npos);
    auto line_at =
        with.find("x_bucket{le=\"0.005\"} 2 # {trace_id=\"0102030405060708090a0b0c0d0e0f10\"} 0.003 ");
    CHECK(line_at != std::string::npos);
    CHECK(with.find("trace_id", line_at + 60) == std::string::npos); // one bucket only

    // Writers racing on one bucket: every exemplar read pairs a trace with its own value.
    latency_histogram raced;
    std::atomic<bool> stop{false};
    std::vector<std::thread> writers;
    for (int w = 1; w <= 2; ++w)
        writers.emplace_back([&, w] {
            latency_histogram::trace_id t{};
            while (!stop.load()) {
                for (std::uint8_t v = 1; v <= 9; ++v) {
                    t.fill(static_cast<std::uint8_t>(w * 16 + v));
                    raced.observe(std::chrono::microseconds(1000 + 100 * v), &t); // one bucket (<= 2.5 ms)
                }
            }
        });
    // On a busy machine the writers may not have run yet: wait (bounded) for their first exemplar,
    // so the reads below race them rather than an empty histogram.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (std::string out;
         out.find("trace_id") == std::string::npos && std::chrono::steady_clock::now() < deadline;
         std::this_thread::yield()) {
        out.clear();
        raced.render(out, "x", "", true);
    }
    std::set<std::string> seen;
    for (int i = 0; i < 2000; ++i) {
        std::string out;
        raced.render(out, "x", "", true);
        auto at = out.find("trace_id=\"");
        if (at == std::string::npos)
            continue;
        auto trace_hex = out.substr(at + 10, 32);
        auto value = std::stod(out.substr(out.find("} ", at) + 2));
        auto v = std::stoi(trace_hex.substr(1, 1), nullptr, 16); // low digit of the first byte
        bool one_writer = true; // every byte of the trace from the same observation
        for (std::size_t k = 2; k < trace_hex.size(); k += 2)
            one_writer = one_writer && trace_hex.compare(k, 2, trace_hex, 0, 2) == 0;
        CHECK(one_writer);
        CHECK(value == doctest::Approx((1000 + 100 * v) / 1e6));
        seen.insert(trace_hex.substr(0, 2));
    }
    stop = true;
    for (auto& t : writers)
        t.join();
    CHECK_FALSE(seen.empty());
}
