// SPDX-License-Identifier: Apache-2.0
// The parts of idemgate-loadtest that need no socket: the histogram, the command line and the
// answer checks on hand-made responses.
#include <doctest/doctest.h>
#include <idemgate/loadtest/answer_check.hpp>
#include <idemgate/loadtest/gateway_metrics.hpp>
#include <idemgate/loadtest/log_histogram.hpp>
#include <idemgate/loadtest/options.hpp>
#include <idemgate/loadtest/request_template.hpp>

using namespace idemgate::loadtest;

TEST_SUITE("loadtest parts")
{

    TEST_CASE("histogram buckets are contiguous and within 0.8 % of the value")
    {
        std::size_t previous = 0;
        for (std::uint64_t v : {0ull, 1ull, 127ull, 128ull, 255ull, 256ull, 257ull, 1000ull, 123456ull,
                                999999999ull, (1ull << 40) - 1}) {
            auto b = log_histogram::bucket_of(v);
            CHECK(b >= previous);
            previous = b;
            CHECK(b < log_histogram::bucket_count);
            auto upper = log_histogram::upper_bound_of(b);
            CHECK(upper >= v);
            CHECK(static_cast<double>(upper - v) <= 0.008 * static_cast<double>(v) + 1);
        }
        // Every bucket's upper bound falls in that bucket and the next value in the next one.
        for (std::size_t b = 0; b + 1 < log_histogram::bucket_count; ++b) {
            auto upper = log_histogram::upper_bound_of(b);
            REQUIRE(log_histogram::bucket_of(upper) == b);
            REQUIRE(log_histogram::bucket_of(upper + 1) == b + 1);
        }
    }

    TEST_CASE("histogram percentiles of 1..100000 microseconds")
    {
        log_histogram h, other;
        for (std::uint64_t us = 1; us <= 100000; ++us)
            (us % 2 ? h : other).record(us * 1000);
        h.merge(other);
        CHECK(h.count() == 100000);
        CHECK(h.min() == 1000);
        CHECK(h.max() == 100000000);
        for (double p : {50.0, 90.0, 99.0, 99.9}) {
            double expected = p / 100.0 * 100000 * 1000;
            double got = static_cast<double>(h.percentile(p));
            CHECK(got >= expected);
            CHECK(got <= expected * 1.008 + 1);
        }
        CHECK(h.percentile(100) == h.max());
        CHECK(log_histogram{}.percentile(99) == 0);
    }

    TEST_CASE("command line: defaults, modes and errors naming the flag")
    {
        auto o = parse_options({"--url", "http://127.0.0.1:8080/api/orders?x=1"});
        CHECK(o.url.host == "127.0.0.1");
        CHECK(o.url.port == "8080");
        CHECK(o.url.target == "/api/orders?x=1");
        CHECK(o.mode == workload::replay);
        CHECK(o.duration == std::chrono::seconds(10));
        CHECK(o.method == "POST");
        CHECK(o.key_header == "Idempotency-Key");

        o = parse_options({"--url=http://h", "--mode", "mixed:90", "--requests", "5", "-H", "X-A: {key}-v"});
        CHECK(o.mode == workload::mixed);
        CHECK(o.replay_percent == 90);
        CHECK(o.url.port == "80");
        CHECK(o.url.target == "/");
        CHECK(!o.duration);
        REQUIRE(o.headers.size() == 1);
        CHECK(o.headers[0].value == "{key}-v");

        o = parse_options({"--url", "http://h:1/p", "--mode", "storm", "--connections", "12"});
        CHECK(o.keys == 100);
        CHECK(o.copies == 12);
        CHECK(o.expected_statuses.test(409)); // a storm's copies in flight
        CHECK(describe(o.expected_statuses) == "1xx, 2xx, 3xx, 409");

        o = parse_options(
            {"--url", "https://h/p", "--expect-status", "2xx, 429", "--max-unexpected", "2.5%"});
        CHECK(o.url.tls);
        CHECK(o.url.port == "443");
        CHECK(o.expected_statuses.test(201));
        CHECK(o.expected_statuses.test(429));
        CHECK(!o.expected_statuses.test(409));
        CHECK(!o.expected_statuses.test(302));
        CHECK(o.max_unexpected_percent == 2.5);
        CHECK(describe(o.expected_statuses) == "2xx, 429");
        CHECK(!default_expected_statuses(workload::replay).test(400));
        CHECK(default_expected_statuses(workload::replay).test(399));

        auto fails_with = [](std::vector<std::string> args, std::string part) {
            try {
                parse_options(args);
            } catch (const usage_error& e) {
                INFO(e.what());
                CHECK(std::string(e.what()).find(part) != std::string::npos);
                return;
            }
            FAIL("accepted: " << part);
        };
        fails_with({"--mode", "replay"}, "a URL is required");
        fails_with({"--url", "ftp://h/p"}, "does not start with http:// or https://");
        fails_with({"--url", "http://h", "--expect-status", "2xx,6"}, "\"6\" is not a status");
        fails_with({"--url", "http://h", "--max-unexpected", "150"}, "0 to 100");
        fails_with({"--url", "http://h", "--metrics", "https://h/metrics"}, "plain http://");
        fails_with({"--url", "http://h:99999/"}, "not 1-65535");
        fails_with({"--url", "http://h", "--mode", "mixed:120"}, "0 to 100");
        fails_with({"--url", "http://h", "--mode", "sometimes"}, "--mode");
        fails_with({"--url", "http://h", "--mode", "storm", "--rate", "10"}, "--");
        fails_with({"--url", "http://h", "--duration", "10s", "--requests", "3"}, "give one");
        fails_with({"--url", "http://h", "--duration", "soon"}, "--duration");
        fails_with({"--url", "http://h", "-H", "Content-Length: 3"}, "set by idemgate-loadtest");
        fails_with({"--url", "http://h", "-H", "Idempotency-Key: k"}, "key header");
        fails_with({"--url", "http://h", "--tenant", "a", "-H", "X-Tenant-ID: b"}, "use one");
        fails_with({"--url", "http://h", "--bogus"}, "unknown option \"--bogus\"");
    }

    TEST_CASE("the request carries the key in its header, other headers and the body")
    {
        auto o = parse_options({"--url", "http://example.test:8080/api/orders", "--tenant", "acme", "-H",
                                "X-Trace: t-{key}", "--body", "{\"order\":\"{key}\"}"});
        request_template t(o);
        std::string bytes;
        t.render(bytes, "k-1");
        CHECK(bytes.rfind("POST /api/orders HTTP/1.1\r\nHost: example.test:8080\r\n", 0) == 0);
        CHECK(bytes.find("\r\nX-Trace: t-k-1\r\n") != std::string::npos);
        CHECK(bytes.find("\r\nX-Tenant-ID: acme\r\n") != std::string::npos);
        CHECK(bytes.find("\r\nIdempotency-Key: k-1\r\n") != std::string::npos);
        CHECK(bytes.find("\r\nContent-Length: 15\r\n\r\n{\"order\":\"k-1\"}") != std::string::npos);
    }

    TEST_CASE("the same request as HTTP/2 fields: pseudo-header fields first, names in lower case")
    {
        auto o = parse_options({"https://example.test/api/orders?x={key}", "--http2", "--tenant", "acme",
                                "-H", "X-Trace: t-{key}", "--body", "{\"order\":\"{key}\"}"});
        request_template t(o);
        request_fields f;
        t.render_fields(f, "k-1");
        std::vector<std::pair<std::string, std::string>> fields;
        for (std::size_t i = 0; i < f.names.size(); ++i)
            fields.emplace_back(f.names[i], f.values[i]);
        std::vector<std::pair<std::string, std::string>> expected{
            {":method", "POST"},
            {":scheme", "https"},
            {":authority", "example.test"},
            {":path", "/api/orders?x=k-1"},
            {"user-agent", "idemgate-loadtest/" IDEMGATE_VERSION},
            {"x-trace", "t-k-1"},
            {"x-tenant-id", "acme"},
            {"idempotency-key", "k-1"},
            {"content-length", "15"}};
        CHECK(fields == expected);
        CHECK(f.body == "{\"order\":\"k-1\"}");
        // Rendered again for another key, in the same storage.
        t.render_fields(f, "k-22");
        CHECK(f.values[7] == "k-22");
        CHECK(f.values.back() == "16");
        // A GET without a body sends no content-length, as over HTTP/1.1.
        auto get = parse_options({"http://example.test/x", "--http2", "-X", "GET"});
        request_template g(get);
        g.render_fields(f, "k");
        CHECK(f.names.back() == "idempotency-key");
        CHECK(f.body.empty());
    }

    TEST_CASE("command line: --http2 and --streams")
    {
        auto o = parse_options({"http://h/x", "--http2", "--streams", "8", "-c", "3", "--mode", "storm"});
        CHECK(o.http2);
        CHECK(o.streams == 8);
        CHECK(o.lanes() == 24);
        CHECK(o.copies == 24); // a storm's default copies: one per stream
        CHECK(parse_options({"http://h/x"}).streams == 1);
        CHECK_THROWS_WITH_AS(parse_options({"http://h/x", "--streams", "4"}),
                             doctest::Contains("--streams applies to --http2 only"), usage_error);
        CHECK_THROWS_WITH_AS(parse_options({"http://h/x", "--http2", "--streams", "0"}),
                             doctest::Contains("--streams: \"0\" is not a positive integer"), usage_error);
        CHECK_THROWS_WITH_AS(parse_options({"http://h/x", "--http2=yes"}),
                             doctest::Contains("--http2 takes no value"), usage_error);
    }

    namespace {

    response answer(unsigned status, std::string body, bool replayed, std::string etag = "\"v1\"")
    {
        response res{http::int_to_status(status), 11};
        res.set(http::field::content_type, "application/json");
        res.set(http::field::etag, etag);
        res.set(http::field::connection, "keep-alive");
        if (replayed)
            res.set("Idempotent-Replayed", "true");
        res.body() = std::move(body);
        res.prepare_payload();
        return res;
    }

    } // namespace

    TEST_CASE("answer checks: identical replays pass whatever the arrival order")
    {
        answer_checker checker(2, "p", {});
        std::vector<std::pair<std::string_view, std::string_view>> scratch;
        checker.observe_table_key(0, "p-0", answer(201, "{\"id\":1}", true), scratch); // replay arrives first
        checker.observe_table_key(0, "p-0", answer(201, "{\"id\":1}", false), scratch);
        checker.observe_table_key(0, "p-0", answer(201, "{\"id\":1}", true), scratch);
        auto t = checker.totals();
        CHECK(t.replays_checked == 2);
        CHECK(t.replays_mismatched == 0);
        CHECK(t.replays_unmarked == 0);
        CHECK(t.keys_executed == 1);
        CHECK(t.keys_without_answer == 1); // key 1 was never asked
        CHECK(t.unexpected_replays == 0);
    }

    TEST_CASE("answer checks: a different body, a different header and a second execution each fail")
    {
        answer_checker checker(3, "p", {});
        std::vector<std::pair<std::string_view, std::string_view>> scratch;
        checker.observe_table_key(0, "p-0", answer(201, "{\"id\":1}", false), scratch);
        checker.observe_table_key(0, "p-0", answer(201, "{\"id\":2}", true), scratch);
        checker.observe_table_key(1, "p-1", answer(201, "{}", false), scratch);
        checker.observe_table_key(1, "p-1", answer(201, "{}", true, "\"v2\""), scratch);
        checker.observe_table_key(2, "p-2", answer(201, "{}", false), scratch);
        checker.observe_table_key(2, "p-2", answer(201, "{}", false), scratch);
        auto t = checker.totals();
        CHECK(t.replays_checked == 3);
        CHECK(t.replays_mismatched == 2);
        CHECK(t.first_mismatch.find("p-0: body differs at byte 6") != std::string::npos);
        CHECK(t.replays_unmarked == 1);
        CHECK(t.keys_executed_twice == 1);
        CHECK(t.first_unmarked.find("p-2") != std::string::npos);
    }

    TEST_CASE("answer checks: ignored headers, 5xx and the gateway's own problems")
    {
        answer_checker checker(2, "p", {"etag"});
        std::vector<std::pair<std::string_view, std::string_view>> scratch;
        response in_flight{http::status::conflict, 11};
        in_flight.set(http::field::content_type, "application/problem+json");
        in_flight.body() = R"({"type":"urn:idemgate:problem:request-in-flight","title":"t","status":409})";
        CHECK(gateway_problem_slug(in_flight) == "request-in-flight");
        CHECK(classify(in_flight) == answer_kind::gateway_problem);
        // The documentation-path form of the type, relative or under an operator's base URI.
        response documented = in_flight;
        documented.body() = R"({"type":"/.well-known/idempotency/problems/outcome-unknown","status":409})";
        CHECK(gateway_problem_slug(documented) == "outcome-unknown");
        documented.body() =
            R"({"type":"https://docs.example/.well-known/idempotency/problems/store-unavailable","status":503})";
        CHECK(gateway_problem_slug(documented) == "store-unavailable");
        documented.body() = R"({"type":"https://api.example/problems/out-of-stock","status":409})";
        CHECK(gateway_problem_slug(documented).empty());         // the upstream's own problem
        checker.observe_table_key(0, "p-0", in_flight, scratch); // before any answer: not compared
        checker.observe_table_key(0, "p-0", answer(502, "", false), scratch); // released: not compared
        checker.observe_table_key(0, "p-0", answer(201, "{}", false, "\"a\""), scratch);
        checker.observe_table_key(0, "p-0", answer(201, "{}", true, "\"b\""), scratch); // ETag ignored
        auto t = checker.totals();
        CHECK(t.replays_checked == 1);
        CHECK(t.replays_mismatched == 0);
        checker.observe_table_key(0, "p-0", in_flight, scratch); // after the answer: a failed replay
        CHECK(checker.totals().replays_mismatched == 1);
        // A key only ever answered as a replay existed before the run.
        checker.observe_table_key(1, "p-1", answer(201, "{}", true), scratch);
        t = checker.totals();
        CHECK(t.unexpected_replays == 1);
        CHECK(t.first_unexpected.find("p-1") != std::string::npos);
    }

    TEST_CASE("gateway metrics: the requests_total samples by outcome")
    {
        auto m = parse_gateway_metrics("# HELP idemgate_requests_total Requests by outcome.\n"
                                       "idemgate_requests_total{outcome=\"executed\"} 12\n"
                                       "idemgate_requests_total{outcome=\"replayed\"} 3.5e+02\n"
                                       "idemgate_requests_total_other{outcome=\"executed\"} 99\n"
                                       "idemgate_request_duration_seconds_count 362\n");
        REQUIRE(m);
        CHECK(m->outcome("executed") == 12);
        CHECK(m->outcome("replayed") == 350);
        CHECK(m->outcome("conflict") == 0);
        CHECK(m->total() == 362);
        CHECK(!parse_gateway_metrics("# nothing here\nup 1\n"));
    }

} // TEST_SUITE
