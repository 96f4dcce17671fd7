// SPDX-License-Identifier: Apache-2.0
// The real idemgate-loadtest binary against the real gateway (memory store) in front of the test
// upstream, and once straight at the upstream, where its replay check must fail.
#include "loadtest_harness.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>
#include <idemgate/test/harness.hpp>
#include <idemgate/test/tls.hpp>
#include <memory>
#include <thread>

using namespace idemgate::test;
namespace json = boost::json;

using namespace loadtest_harness;

TEST_SUITE("loadtest binary")
{

    TEST_CASE("replay mode through the gateway passes every check and --json parses")
    {
        loadtest_setup s;
        auto r =
            run_loadtest({"--url", s.url("/api/orders"), "--mode", "replay", "--keys", "40", "--connections",
                          "8", "--requests", "2000", "--body", "{\"order\":\"{key}\"}", "-H",
                          "Content-Type: application/json", "--metrics", s.metrics_url(), "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        CHECK(r.summary.at("ok").as_bool());
        CHECK(r.summary.at("mode").as_string() == "replay");
        CHECK(int_at(r.summary, {"answers"}) == 2000);
        CHECK(int_at(r.summary, {"status", "201"}) == 2000);
        CHECK(int_at(r.summary, {"warmup", "answers"}) == 40);
        CHECK(int_at(r.summary, {"checks", "replays_checked"}) == 2000);
        CHECK(int_at(r.summary, {"checks", "replays_mismatched"}) == 0);
        CHECK(int_at(r.summary, {"checks", "replays_unmarked"}) == 0);
        CHECK(int_at(r.summary, {"executions", "keys_executed"}) == 40);
        CHECK(int_at(r.summary, {"executions", "gateway", "executed"}) == 40);
        CHECK(int_at(r.summary, {"executions", "gateway", "replayed"}) == 2000);
        CHECK(r.summary.at("executions").as_object().at("per_key").as_double() == 1.0);
        CHECK(r.summary.at("latency_us").as_object().at("p99").as_double() > 0);
        CHECK(r.summary.at("failures").as_array().empty());
        CHECK(s.upstream.executions() == 40);
    }

    TEST_CASE("storm mode reports exactly one execution per key through the gateway's metrics")
    {
        loadtest_setup s;
        // The upstream takes 30 ms, so the copies of a key arrive while its first copy is in flight.
        auto r =
            run_loadtest({"--url", s.url("/api/orders"), "--mode", "storm", "--keys", "25", "--connections",
                          "16", "-H", "X-Test-Delay-Ms: 30", "--metrics", s.metrics_url(), "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        CHECK(r.summary.at("ok").as_bool());
        CHECK(int_at(r.summary, {"copies"}) == 16);
        CHECK(int_at(r.summary, {"status", "201"}) == 25 * 16);
        CHECK(int_at(r.summary, {"executions", "keys_executed"}) == 25);
        CHECK(int_at(r.summary, {"executions", "gateway", "executed"}) == 25);
        CHECK(r.summary.at("executions").as_object().at("per_key").as_double() == 1.0);
        CHECK(int_at(r.summary, {"checks", "keys_executed_more_than_once"}) == 0);
        CHECK(int_at(r.summary, {"checks", "replays_checked"}) == 25 * 15);
        // Every 409 the gateway counted reached us and was asked again.
        CHECK(int_at(r.summary, {"conflicts_409"}) ==
              int_at(r.summary, {"executions", "gateway", "conflict"}));
        CHECK(s.upstream.executions() == 25);
    }

    TEST_CASE("storm mode fails where the route is not guarded: every copy executes")
    {
        loadtest_setup s;
        auto r = run_loadtest({"--url", s.url("/plain/orders"), "--mode", "storm", "--keys", "5",
                               "--connections", "4", "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 1);
        REQUIRE(!r.summary.empty());
        CHECK_FALSE(r.summary.at("ok").as_bool());
        CHECK(int_at(r.summary, {"checks", "keys_executed_more_than_once"}) == 5);
        CHECK(int_at(r.summary, {"checks", "replays_unmarked"}) == 15);
        CHECK(s.upstream.executions() == 20);
    }

    TEST_CASE("pointed straight at the upstream, without the gateway, the replay check fails")
    {
        loadtest_setup s;
        auto upstream_url = "http://" + s.upstream.address() + "/api/orders";
        auto r =
            run_loadtest({"--url", upstream_url, "--keys", "10", "--connections", "4", "--requests", "100"});
        INFO(r.output);
        CHECK(r.exit_status == 1);
        CHECK(r.output.find("result       FAIL") != std::string::npos);
        // The test upstream numbers its executions in the body: every "replay" differs from the first.
        CHECK(r.output.find("100 answers differed from their key's first answer") != std::string::npos);
        CHECK(r.output.find("body differs at byte") != std::string::npos);
        CHECK(r.output.find("no Idempotent-Replayed: true") != std::string::npos);
        CHECK(s.upstream.executions() == 110);
    }

    TEST_CASE("--rate with --requests finishes and reports latency from the intended send times")
    {
        loadtest_setup s;
        auto r = run_loadtest({"--url", s.url("/api/orders"), "--rate", "400", "--requests", "200", "--keys",
                               "20", "--connections", "4", "--metrics", s.metrics_url(), "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        CHECK(r.summary.at("loop").as_string() == "open");
        CHECK(r.summary.at("rate").as_double() == 400);
        CHECK(int_at(r.summary, {"answers"}) == 200);
        CHECK(int_at(r.summary, {"checks", "replays_checked"}) == 200);
        const auto& latency = r.summary.at("latency_us").as_object();
        for (auto name : {"p50", "p90", "p99", "p99_9", "max"})
            CHECK(latency.at(name).as_double() > 0);
        CHECK(latency.at("p50").as_double() <= latency.at("max").as_double());
    }

    TEST_CASE("mixed and first modes: executions per key match the gateway's count")
    {
        loadtest_setup s;
        auto mixed = run_loadtest({"--url", s.url("/api/orders"), "--mode", "mixed:75", "--keys", "10",
                                   "--requests", "400", "--metrics", s.metrics_url(), "--json"});
        INFO(mixed.output);
        CHECK(mixed.exit_status == 0);
        REQUIRE(!mixed.summary.empty());
        // 75 % of 400 replay the 10 warm keys; 100 new keys execute once each.
        CHECK(int_at(mixed.summary, {"checks", "replays_checked"}) == 300);
        CHECK(int_at(mixed.summary, {"executions", "keys_executed"}) == 110);
        CHECK(int_at(mixed.summary, {"executions", "gateway", "executed"}) == 110);

        auto first = run_loadtest({"--url", s.url("/api/orders"), "--mode", "first", "--requests", "150",
                                   "--metrics", s.metrics_url(), "--json"});
        INFO(first.output);
        CHECK(first.exit_status == 0);
        REQUIRE(!first.summary.empty());
        CHECK(int_at(first.summary, {"executions", "keys_executed"}) == 150);
        CHECK(int_at(first.summary, {"executions", "gateway", "executed"}) == 150);
        CHECK(s.upstream.executions() == 110 + 150);
    }

    TEST_CASE("a tenant route: --tenant passes; without it the warm-up's 400s stop the run with a hint")
    {
        loadtest_setup s;
        auto with = run_loadtest({"--url", s.url("/tenant/orders"), "--tenant", "acme", "--keys", "5",
                                  "--requests", "50", "--json"});
        INFO(with.output);
        CHECK(with.exit_status == 0);
        // A warm-up of 1000 keys that is refused from the first answer stops after about 100 and
        // never runs the timed phase.
        auto without =
            run_loadtest({"--url", s.url("/tenant/orders"), "--keys", "1000", "--duration", "30s", "--json"});
        INFO(without.output);
        CHECK(without.exit_status == 1);
        REQUIRE(!without.summary.empty());
        auto warm = int_at(without.summary, {"warmup", "gateway_problems", "missing-tenant"});
        CHECK(warm >= 100);
        CHECK(warm < 300);
        CHECK(int_at(without.summary, {"answers"}) == 0);
        CHECK(without.summary.at("warmup").as_object().at("stopped_early").as_bool());
        const auto& failures = without.summary.at("failures").as_array();
        REQUIRE(failures.size() >= 2);
        std::string first(failures[0].as_string());
        CHECK(first.find("were not the expected 1xx, 2xx, 3xx") != std::string::npos);
        CHECK(first.find("400 Bad Request") != std::string::npos);
        CHECK(first.find("missing-tenant") != std::string::npos);
        CHECK(first.find("pass --tenant") != std::string::npos);
        // The text report says it too, loudly.
        auto text = run_loadtest({"--url", s.url("/tenant/orders"), "--keys", "200", "--requests", "10"});
        CHECK(text.exit_status == 1);
        CHECK(text.output.find("result       FAIL") != std::string::npos);
        CHECK(text.output.find("hint         the route scopes keys by tenant") != std::string::npos);
    }

    TEST_CASE("a rate-limited tenant fails the run instead of reporting the 429s as throughput")
    {
        loadtest_setup s;
        auto limited = run_loadtest({"--url", s.url("/tenant/orders"), "--tenant", "slow", "--mode", "first",
                                     "--requests", "2000", "--json"});
        INFO(limited.output);
        CHECK(limited.exit_status == 1);
        REQUIRE(!limited.summary.empty());
        CHECK(int_at(limited.summary, {"status", "429"}) >= 90);
        CHECK(int_at(limited.summary, {"answers"}) < 2000); // stopped early
        CHECK(limited.summary.at("stopped_early").as_bool());
        std::string first(limited.summary.at("failures").as_array().at(0).as_string());
        CHECK(first.find("429") != std::string::npos);
        CHECK(first.find("rate-limiting") != std::string::npos);
        // Told that 429s are expected, with a share allowed, the same run is judged on the rest.
        auto allowed = run_loadtest({"--url", s.url("/tenant/orders"), "--tenant", "slow", "--mode", "first",
                                     "--requests", "200", "--expect-status", "2xx,429", "--json"});
        INFO(allowed.output);
        CHECK(allowed.exit_status == 0);
        CHECK(int_at(allowed.summary, {"unexpected"}) == 0);
        auto share = run_loadtest({"--url", s.url("/tenant/orders"), "--tenant", "slow", "--mode", "first",
                                   "--requests", "20", "--max-unexpected", "100", "--json"});
        INFO(share.output);
        CHECK(share.exit_status == 0);
        CHECK(int_at(share.summary, {"unexpected"}) >= 10);
    }

    TEST_CASE("https:// URLs: the certificate is checked (--cacert), or not (--insecure)")
    {
        test_certificates certs;
        loadtest_setup s("tls:\n  cert_file: \"" + certs.server_cert + "\"\n  key_file: \"" +
                         certs.server_key + "\"\n");
        auto trusted = run_loadtest({"--url", s.url("/api/orders", "https"), "--cacert", certs.ca_cert,
                                     "--keys", "5", "--requests", "50", "--json"});
        INFO(trusted.output);
        CHECK(trusted.exit_status == 0);
        CHECK(int_at(trusted.summary, {"checks", "replays_checked"}) == 50);
        CHECK(int_at(trusted.summary, {"bytes", "received"}) > 50 * 50);
        auto insecure = run_loadtest(
            {"--url", s.url("/api/orders", "https"), "-k", "--keys", "5", "--requests", "20", "--json"});
        INFO(insecure.output);
        CHECK(insecure.exit_status == 0);
        // Not signed by a CA it trusts, or not for this name: refused before the run.
        auto untrusted = run_loadtest(
            {"--url", s.url("/api/orders", "https"), "--cacert", certs.other_ca_cert, "--requests", "5"});
        CHECK(untrusted.exit_status == 2);
        CHECK(untrusted.output.find("certificate verify failed") != std::string::npos);
        auto plain = run_loadtest({"--url", s.url("/api/orders"), "--insecure", "--requests", "5"});
        CHECK(plain.exit_status == 2);
        CHECK(plain.output.find("applies to https:// URLs only") != std::string::npos);
    }

    TEST_CASE("a bad command line or an unreachable target exits 2 with a message")
    {
        auto bad = run_loadtest({"--url", "http://127.0.0.1:1/x", "--mode", "sometimes"});
        CHECK(bad.exit_status == 2);
        CHECK(bad.output.find("--mode") != std::string::npos);
        auto refused = run_loadtest(
            {"--url", "http://127.0.0.1:" + std::to_string(free_port()) + "/x", "--requests", "5"});
        CHECK(refused.exit_status == 2);
        CHECK(refused.output.find("cannot connect") != std::string::npos);
    }

} // TEST_SUITE
