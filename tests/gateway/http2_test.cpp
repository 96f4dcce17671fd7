// SPDX-License-Identifier: Apache-2.0
// HTTP/2 to clients: real clients (curl, the raw-frame driver h2_driver.py) against the real
// binary over the store under test. A keyed request over h2 goes through the same filter as over
// HTTP/1.1: the same replay, the same single execution under concurrency, the same recording of
// a request whose client went away; and the codec refuses what RFC 9113 says is malformed and
// ends connections that flood it.
#include "gateway_fixture.hpp"
#include "h2_support.hpp"
#include "idemgate/test/tls.hpp"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <doctest/doctest.h>
#include <fstream>
#include <map>
#include <set>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

gateway_options h2_options(std::string top_level = "http2:\n  cleartext: true\n")
{
    gateway_options o;
    o.top_level = std::move(top_level);
    o.store_extra = "  local_tier:\n    max_bytes: 4MiB\n";
    o.limits = "  max_request_body: 8KiB\n";
    return o;
}

// curl's exit status and its output lines (stdout and stderr).
std::pair<int, std::vector<std::string>> run_curl(std::vector<std::string> args)
{
    child_process curl("/usr/bin/curl", std::move(args));
    auto status = curl.wait_exit(15s);
    return {status.value_or(-1), curl.lines()};
}

// An answer's fields as lower-case name -> values, without those each answer has its own value
// of (Date, the request's ID) and the connection-specific ones HTTP/2 leaves out.
std::multimap<std::string, std::string> comparable(const std::multimap<std::string, std::string>& fields)
{
    static const std::set<std::string> skip{"date", "x-request-id", "connection", "keep-alive"};
    std::multimap<std::string, std::string> out;
    for (const auto& [name, value] : fields)
        if (!skip.count(name))
            out.emplace(name, value);
    return out;
}

std::multimap<std::string, std::string> comparable(const boost::json::object& h2_answer)
{
    std::multimap<std::string, std::string> fields;
    for (const auto& f : h2_answer.at("headers").as_array()) {
        auto name = std::string(f.as_array()[0].as_string());
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        fields.emplace(name, std::string(f.as_array()[1].as_string()));
    }
    return comparable(fields);
}

long rss_kib(int pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind("VmRSS:", 0) == 0)
            return std::stol(line.substr(6));
    return -1;
}

} // namespace

TEST_SUITE_BEGIN("http2");

TEST_CASE("curl: prior-knowledge h2 on a cleartext listener and h2 by ALPN over TLS; a keyed POST runs once")
{
    SUBCASE("cleartext")
    {
        gateway_fixture g(h2_options());
        const auto key = unique_key("h2c-curl");
        const auto url = "http://127.0.0.1:" + std::to_string(g.port()) + "/api/orders";
        for (int i = 0; i < 2; ++i) {
            auto [status, lines] = run_curl({"-sS", "--http2-prior-knowledge", "-o", "/dev/null", "-w",
                                             "%{http_version} %{http_code}\n", "-X", "POST", "-H",
                                             "Idempotency-Key: " + key, "-d", "{}", url});
            REQUIRE(status == 0);
            CHECK(lines.back() == "2 201");
        }
        CHECK(g.executions() == 1);
        // Without the preface the same listener still speaks HTTP/1.1.
        auto [status, lines] =
            run_curl({"-sS", "-o", "/dev/null", "-w", "%{http_version} %{http_code}\n", url + "x"});
        CHECK(lines.back() == "1.1 201");
    }
    SUBCASE("TLS")
    {
        test_certificates certs;
        auto options = h2_options("tls:\n  cert_file: \"" + certs.server_cert + "\"\n  key_file: \"" +
                                  certs.server_key + "\"\n");
        gateway_fixture g(options);
        const auto key = unique_key("h2-tls-curl");
        const auto url = "https://localhost:" + std::to_string(g.port()) + "/api/orders";
        for (int i = 0; i < 2; ++i) {
            auto [status, lines] = run_curl({"-sS", "--http2", "--cacert", certs.ca_cert, "-o", "/dev/null",
                                             "-w", "%{http_version} %{http_code}\n", "-X", "POST", "-H",
                                             "Idempotency-Key: " + key, "-d", "{}", url});
            REQUIRE(status == 0);
            CHECK(lines.back() == "2 201");
        }
        CHECK(g.executions() == 1);
        // A second client library, the same record.
        auto httpx = h2_driver({"httpx", h2_port(g.port()), url, certs.ca_cert, key});
        REQUIRE(httpx.size() == 1);
        CHECK(httpx[0].at("http_version").as_string() == "HTTP/2");
        CHECK(httpx[0].at("status").as_int64() == 201);
        CHECK(httpx[0].at("replayed").as_string() == "true");
        auto [status, lines] = run_curl({"-sS", "--http1.1", "--cacert", certs.ca_cert, "-o", "/dev/null",
                                         "-w", "%{http_version} %{http_code}\n", url + "x"});
        CHECK(lines.back() == "1.1 201");
    }
}

TEST_CASE("a keyed replay over h2 equals the HTTP/1.1 replay, from the store and from the local tier")
{
    gateway_fixture g(h2_options());
    const auto key = unique_key("h2-replay");
    const std::string body = R"({"sku":"h2"})";
    std::vector<std::pair<std::string, std::string>> fields{{"X-Test-Header", "X-Order-Ref: A-1"}};
    auto first = g.post("/api/orders", key, body, fields);
    REQUIRE(first.status == 201);
    auto h1_replay = g.post("/api/orders", key, body, fields);
    REQUIRE(h1_replay.header("idempotent-replayed") == "true");

    auto hits_before = metric(g.gateway->admin_port(), "idemgate_local_tier_lookups_total{result=\"hit\"}");
    // Three replays on one connection (one thread): the first may come from the store, the
    // later ones from that thread's tier.
    auto answers = h2_driver({"request", h2_port(g.port()), "POST", "/api/orders", "idempotency-key:" + key,
                              "content-type:application/json", "x-test-header:X-Order-Ref: A-1", "--body",
                              body, "--repeat", "3"});
    REQUIRE(answers.size() == 3);
    for (const auto& a : answers) {
        CHECK(a.at("status").as_int64() == h1_replay.status);
        CHECK(comparable(a) == comparable(h1_replay.headers));
        CHECK(a.at("body").as_string() == h1_replay.body);
    }
    auto hits_after = metric(g.gateway->admin_port(), "idemgate_local_tier_lookups_total{result=\"hit\"}");
    CHECK(hits_after >= hits_before + 2);
    CHECK(g.executions() == 1);
    // The access log says which protocol and stream each request came on.
    CHECK(g.gateway->process().wait_for_line(
        [](const std::string& l) { return l.find("\"proto\":\"h2\",\"stream\":5") != std::string::npos; }));
}

TEST_CASE("100 streams on one connection, 10 keys x 10 duplicates: each key executes once")
{
    for (std::string mode : {"reject", "wait"}) {
        CAPTURE(mode);
        auto options = h2_options();
        options.idempotency_extra = "      on_in_flight: " + mode + "\n";
        gateway_fixture g(options);
        const auto prefix = unique_key("h2-many-" + mode);
        auto out = h2_driver(
            {"concurrent", h2_port(g.port()), "/api/orders", prefix, "10", "10", "x-test-delay-ms:300"});
        REQUIRE(out.size() == 1);
        const auto& statuses = out[0].at("statuses").as_object();
        INFO(boost::json::serialize(out[0]));
        CHECK(out[0].at("resets").as_int64() == 0);
        CHECK(g.executions() == 10);
        if (mode == "reject") {
            CHECK(statuses.at("201").as_int64() == 10);
            CHECK(statuses.at("409").as_int64() == 90);
        } else {
            CHECK(statuses.at("201").as_int64() == 100);
        }
        auto keys = parse_object(http_request(g.upstream.port(), "GET", "/__keys", {}, {}, io_timeout).body);
        for (int k = 0; k < 10; ++k)
            CHECK(keys.at(prefix + "-" + std::to_string(k)).as_array().size() == 1);
    }
}

TEST_CASE("h2 and HTTP/1.1 clients on one key at once: it executes once")
{
    gateway_fixture g(h2_options());
    const auto prefix = unique_key("h2-mixed");
    const auto key = prefix + "-0";
    child_process h2("/usr/bin/python3",
                     {IDEMGATE_SOURCE_DIR "/tests/gateway/h2_driver.py", "concurrent", h2_port(g.port()),
                      "/api/orders", prefix, "1", "5", "x-test-delay-ms:300"});
    std::this_thread::sleep_for(50ms);
    auto h1 = g.post("/api/orders", key, R"({"key": 0})", {{"X-Test-Delay-Ms", "300"}});
    CHECK((h1.status == 201 || h1.status == 409));
    REQUIRE(h2.wait_exit(10s) == 0);
    auto replay = g.post("/api/orders", key, R"({"key": 0})");
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(g.executions() == 1);
}

TEST_CASE("a stream reset after its request reached the upstream still completes and records")
{
    gateway_fixture g(h2_options());
    const auto key = unique_key("h2-cancel");
    h2_driver({"cancel", h2_port(g.port()), "/api/orders", key, "x-test-delay-ms:400", "--upstream",
               std::to_string(g.upstream.port())});
    REQUIRE(g.wait_for_executions(1));
    // Until the upstream answers and the filter records, a retry finds the key in flight (409).
    http_response replay;
    poll_until(5s, [&] {
        replay = g.post("/api/orders", key, R"({"cancel":1})");
        return replay.status != 409;
    });
    CHECK(replay.status == 201);
    CHECK(replay.header("idempotent-replayed") == "true");
    CHECK(g.executions() == 1);
}

TEST_CASE("drain: an h2 connection gets GOAWAY and its open stream finishes")
{
    gateway_fixture g(h2_options());
    child_process driver("/usr/bin/python3", {IDEMGATE_SOURCE_DIR "/tests/gateway/h2_driver.py", "drain",
                                              h2_port(g.port()), "/plain/d"});
    REQUIRE(
        driver.wait_for_line([](const std::string& l) { return l.find("\"sent\"") != std::string::npos; }));
    REQUIRE(g.wait_for_executions(1));
    g.process().signal(SIGTERM);
    auto done = driver.wait_for_line(
        [](const std::string& l) { return l.find("\"goaway\"") != std::string::npos; }, 10s);
    REQUIRE(done);
    auto result = boost::json::parse(*done).as_object();
    CHECK(result.at("goaway").as_string() == "NO_ERROR");
    CHECK(result.at("last_stream").as_int64() == 1);
    CHECK(result.at("status").as_int64() == 201);
    CHECK(g.process().wait_exit(10s) == 0);
}

TEST_CASE("conformance: malformed and flooding clients get the RFC 9113 outcome; the gateway keeps serving")
{
    gateway_fixture g(h2_options());
    const int pid = g.process().pid();
    auto rss_before = rss_kib(pid);
    auto cases = h2_driver({"conformance", h2_port(g.port())}, 90s);
    CHECK(cases.size() == 23);
    for (const auto& c : cases) {
        INFO(boost::json::serialize(c));
        CHECK(c.at("ok").as_bool());
    }
    auto rss_after = rss_kib(pid);
    MESSAGE("gateway RSS during the conformance set: " << rss_before << " KiB before, " << rss_after
                                                       << " KiB after");
    auto admin = g.gateway->admin_port();
    CHECK(metric(admin, "idemgate_http2_limits_total{limit=\"stream_resets\"}") >= 1);
    CHECK(metric(admin, "idemgate_http2_limits_total{limit=\"control_frames\"}") >= 1);
    CHECK(metric(admin, "idemgate_http2_limits_total{limit=\"header_list\"}") >= 1);
    CHECK(metric(admin, "idemgate_requests_in_flight") == 0);
    // Another connection, after the floods, is served.
    auto again = h2_driver({"request", h2_port(g.port()), "GET", "/plain/after"});
    REQUIRE(again.size() == 1);
    CHECK(again[0].at("status").as_int64() == 201);
}

TEST_CASE("an answer stalled by a zero flow-control window is reset after timeouts.client_write")
{
    auto options = h2_options();
    options.timeouts = "  client_write: 1s\n";
    gateway_fixture g(options);
    auto out = h2_driver({"stall", h2_port(g.port()), "/plain/stall"});
    REQUIRE(out.size() == 1);
    CHECK(out[0].at("got").as_string() == "reset CANCEL");
    CHECK(out[0].at("after_ms").as_int64() >= 900);
    CHECK(metric(g.gateway->admin_port(), "idemgate_http2_limits_total{limit=\"stall\"}") == 1);
    CHECK(metric(g.gateway->admin_port(), "idemgate_requests_in_flight") == 0);
}

TEST_CASE("problem answers over h2 are the HTTP/1.1 documents: 413, 431, 400 for a missing required key")
{
    gateway_fixture g(h2_options());
    struct row {
        std::string name;
        std::vector<std::pair<std::string, std::string>> fields;
        std::string path;
        std::string body;
    };
    const row rows[] = {
        {"413", {}, "/api/orders", std::string(9000, 'z')},
        {"431", {{"X-Big", std::string(20000, 'y')}}, "/api/orders", "{}"},
        {"400 missing key", {}, "/strict/orders", "{}"},
    };
    for (const auto& r : rows) {
        INFO(r.name);
        auto h1 = gateway_request(g.port(), "POST", r.path, r.fields, r.body);
        std::vector<std::string> args{"request", h2_port(g.port()), "POST", r.path};
        for (const auto& [name, value] : r.fields)
            args.push_back(name + ":" + value);
        args.insert(args.end(), {"--body", r.body});
        auto h2 = h2_driver(args);
        REQUIRE(h2.size() == 1);
        CHECK(h2[0].at("status").as_int64() == h1.status);
        CHECK(h2[0].at("body").as_string() == h1.body);
        CHECK(comparable(h2[0]) == comparable(h1.headers));
    }
}
