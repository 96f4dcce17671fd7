// SPDX-License-Identifier: Apache-2.0
// Answers too large to record (limits.max_record_body) over HTTP/2: passed on as they arrive in
// DATA frames under the client's flow control, leaving a status-only record, as over HTTP/1.1
// (big_answers_test.cpp). Real clients: curl --http2 by ALPN, and the raw-frame driver for
// resets.
#include "gateway_fixture.hpp"
#include "h2_support.hpp"
#include "idemgate/test/tls.hpp"

#include <doctest/doctest.h>
#include <fstream>
#include <iterator>
#include <thread>

using namespace idemgate::test;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t nine_mib = 9 * 1024 * 1024;

std::string read_file(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// A keyed POST with curl --http2 (h2 by ALPN) whose answer body and head go to files in `dir`;
// curl's exit status and its "%{http_version} %{http_code}" line.
std::pair<int, std::string> curl_post(const temp_dir& dir, const test_certificates& certs, std::uint16_t port,
                                      const std::string& key, bool chunked)
{
    std::vector<std::string> args{"-sS",      "--http2",
                                  "--cacert", certs.ca_cert,
                                  "-o",       dir.path() + "/body",
                                  "-D",       dir.path() + "/head",
                                  "-w",       "%{http_version} %{http_code}\n",
                                  "-X",       "POST",
                                  "-H",       "Idempotency-Key: " + key,
                                  "-H",       "Content-Type: application/json",
                                  "-H",       "X-Test-Body-Size: " + std::to_string(nine_mib),
                                  "-d",       "{}"};
    if (chunked)
        args.insert(args.end(), {"-H", "X-Test-Chunked: 1"});
    args.push_back("https://localhost:" + std::to_string(port) + "/api/orders");
    child_process curl("/usr/bin/curl", std::move(args));
    auto status = curl.wait_exit(30s);
    auto lines = curl.lines();
    return {status.value_or(-1), lines.empty() ? std::string() : lines.back()};
}

// The value of a field in curl's dump of an answer's head ("" if absent).
std::string head_field(const std::string& head, const std::string& lower_name)
{
    auto at = head.find("\n" + lower_name + ": ");
    if (at == std::string::npos)
        return {};
    at += lower_name.size() + 3;
    return head.substr(at, head.find_first_of("\r\n", at) - at);
}

} // namespace

TEST_SUITE_BEGIN("http2");

TEST_CASE("h2: a 9 MiB answer reaches curl whole (Content-Length and unframed), runs once, and its retry is "
          "refused with 422 answer-not-replayable")
{
    test_certificates certs;
    gateway_options options;
    options.top_level =
        "tls:\n  cert_file: \"" + certs.server_cert + "\"\n  key_file: \"" + certs.server_key + "\"\n";
    gateway_fixture g(options);
    temp_dir dir;
    long executions = 0;
    for (bool chunked : {false, true}) {
        CAPTURE(chunked);
        const auto key = unique_key(chunked ? "h2-big-chunked" : "h2-big-length");
        auto [status, line] = curl_post(dir, certs, g.port(), key, chunked);
        REQUIRE(status == 0);
        CHECK(line == "2 201");
        auto body = read_file(dir.path() + "/body");
        CHECK(body.size() == nine_mib);
        CHECK(body == std::string(nine_mib, 'x'));
        auto head = read_file(dir.path() + "/head");
        INFO(head);
        CHECK(head_field(head, "content-length") == (chunked ? "" : std::to_string(nine_mib)));
        CHECK(head_field(head, "transfer-encoding").empty());
        CHECK(head_field(head, "idempotency-status") == "executed");
        CHECK(g.executions() == ++executions);

        auto [retry_status, retry_line] = curl_post(dir, certs, g.port(), key, chunked);
        REQUIRE(retry_status == 0);
        CHECK(retry_line == "2 422");
        auto problem = parse_object(read_file(dir.path() + "/body"));
        CHECK(problem["type"] == "/.well-known/idempotency/problems/answer-not-replayable");
        CHECK(problem["original_status"] == 201);
        CHECK(head_field(read_file(dir.path() + "/head"), "idempotency-status") == "not-replayable");
        CHECK(g.executions() == executions); // never executed again
    }
}

TEST_CASE("h2: a client that resets the stream in the middle of a big answer leaves the key completed")
{
    gateway_options options;
    options.top_level = "http2:\n  cleartext: true\n";
    gateway_fixture g(options);
    const auto key = unique_key("h2-big-reset");
    auto out = h2_driver({"big", h2_port(g.port()), "/api/orders", key, std::to_string(256 * 1024),
                          "x-test-body-size:" + std::to_string(nine_mib)});
    REQUIRE(out.size() == 1);
    CHECK(out[0].at("status").as_int64() == 201);
    CHECK(out[0].at("cancelled").as_bool());
    CHECK_FALSE(out[0].at("ended").as_bool());
    CHECK(out[0].at("bytes").as_int64() < static_cast<std::int64_t>(nine_mib));
    CHECK(g.executions() == 1);
    // The key settles once the gateway sees the reset: a status-only record.
    http_response retry;
    for (int i = 0; i < 50; ++i) {
        retry = g.post("/api/orders", key, "{}");
        if (retry.status != 409)
            break;
        std::this_thread::sleep_for(100ms);
    }
    CAPTURE(retry.body);
    CHECK(is_problem(retry, 422));
    CHECK(parse_object(retry.body)["original_status"] == 201);
    CHECK(g.executions() == 1);
    double in_flight = -1;
    for (int i = 0; i < 20 && in_flight != 0; ++i) {
        in_flight = metric(g.gateway->admin_port(), "idemgate_requests_in_flight");
        std::this_thread::sleep_for(50ms);
    }
    CHECK(in_flight == 0);
}

TEST_CASE("h2: a big answer whose upstream breaks off resets the stream with INTERNAL_ERROR, never a whole "
          "answer")
{
    gateway_options options;
    options.top_level = "http2:\n  cleartext: true\n";
    options.limits = "  max_record_body: 64KiB\n";
    gateway_fixture g(options);
    const auto key = unique_key("h2-big-broken");
    auto out = h2_driver({"big", h2_port(g.port()), "/api/orders", key, "0",
                          "x-test-body-size:" + std::to_string(1024 * 1024),
                          "x-test-break-after:" + std::to_string(512 * 1024)});
    REQUIRE(out.size() == 1);
    CHECK(out[0].at("status").as_int64() == 201);
    CHECK_FALSE(out[0].at("ended").as_bool());
    CHECK(out[0].at("reset") == "INTERNAL_ERROR");
    CHECK(g.executions() == 1);
}
