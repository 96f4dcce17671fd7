// SPDX-License-Identifier: Apache-2.0
// The real idemgate-loadtest binary over HTTP/2: against the real gateway's h2 (TLS, ALPN) and
// h2c (prior knowledge) listeners in front of the test upstream, and against a small server in
// this file that breaks the protocol (GOAWAY, RST_STREAM, bytes that are no frame, silence),
// where the run must fail with a line naming what happened, never hang.
#include "loadtest_harness.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>
#include <idemgate/test/harness.hpp>
#include <idemgate/test/tls.hpp>
#include <sstream>
#include <thread>

using namespace idemgate::test;
using namespace loadtest_harness;
namespace asio = boost::asio;

namespace {

// A counter's value on the gateway's /metrics (summed over its label sets), or -1.
double gateway_metric(const loadtest_setup& s, const std::string& name)
{
    auto res = http_request(s.gateway->admin_port(), "GET", "/metrics", {}, {}, 5s);
    std::istringstream in(res.body);
    std::string line;
    double sum = -1;
    while (std::getline(in, line)) {
        if (line.rfind(name, 0) != 0 || (line[name.size()] != ' ' && line[name.size()] != '{'))
            continue;
        sum = std::max(sum, 0.0) + std::stod(line.substr(line.rfind(' ') + 1));
    }
    return sum;
}

// What the broken server does once a request's HEADERS arrive.
enum class misbehaviour {
    goaway,  // GOAWAY PROTOCOL_ERROR, last stream 0: no stream will be answered
    reset,   // RST_STREAM INTERNAL_ERROR on every request stream
    garbage, // bytes that are no HTTP/2 frame
    silent,  // nothing, ever (its SETTINGS were sent at the start)
    graceful // the first request: GOAWAY NO_ERROR, last stream 0 (not processed); later ones: 200
};

std::string frame(std::uint8_t type, std::uint8_t flags, std::uint32_t stream, const std::string& payload)
{
    std::string f;
    auto n = payload.size();
    f += static_cast<char>((n >> 16) & 0xff);
    f += static_cast<char>((n >> 8) & 0xff);
    f += static_cast<char>(n & 0xff);
    f += static_cast<char>(type);
    f += static_cast<char>(flags);
    for (int shift = 24; shift >= 0; shift -= 8)
        f += static_cast<char>((stream >> shift) & 0xff);
    return f + payload;
}

std::string u32(std::uint32_t v)
{
    return {static_cast<char>(v >> 24), static_cast<char>((v >> 16) & 0xff),
            static_cast<char>((v >> 8) & 0xff), static_cast<char>(v & 0xff)};
}

// An h2c server that speaks just enough HTTP/2 (the preface, SETTINGS and their ACK) to reach a
// request, then misbehaves. Raw frames over an Asio socket, on a thread of its own.
class broken_h2_server {
public:
    explicit broken_h2_server(misbehaviour how)
        : acceptor_(ioc_, {asio::ip::make_address("127.0.0.1"), 0}), how_(how)
    {
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { ioc_.run(); });
    }
    ~broken_h2_server()
    {
        ioc_.stop();
        thread_.join();
    }
    std::string url() const
    {
        return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/api/orders";
    }
    int requests() const { return requests_.load(); }
    int connections() const { return connections_.load(); }

private:
    using tcp = asio::ip::tcp;
    static constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

    asio::awaitable<void> accept_loop()
    {
        for (;;) {
            auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
            if (ec)
                co_return;
            ++connections_;
            asio::co_spawn(ioc_, serve(std::move(socket)), asio::detached);
        }
    }

    asio::awaitable<void> serve(tcp::socket socket)
    {
        std::string in, out = frame(4, 0, 0, ""); // our SETTINGS: none changed
        co_await asio::async_write(socket, asio::buffer(out), use_tuple);
        bool preface = false;
        std::vector<char> buf(16 * 1024);
        for (;;) {
            auto [ec, n] = co_await socket.async_read_some(asio::buffer(buf), use_tuple);
            if (ec)
                co_return;
            in.append(buf.data(), n);
            if (!preface) {
                if (in.size() < 24)
                    continue;
                in.erase(0, 24); // PRI * HTTP/2.0 ...
                preface = true;
            }
            out.clear();
            while (in.size() >= 9) {
                std::size_t length = (std::size_t(std::uint8_t(in[0])) << 16) |
                                     (std::size_t(std::uint8_t(in[1])) << 8) | std::uint8_t(in[2]);
                if (in.size() < 9 + length)
                    break;
                auto type = static_cast<std::uint8_t>(in[3]);
                auto flags = static_cast<std::uint8_t>(in[4]);
                std::uint32_t stream =
                    ((std::uint32_t(std::uint8_t(in[5])) << 24) | (std::uint32_t(std::uint8_t(in[6])) << 16) |
                     (std::uint32_t(std::uint8_t(in[7])) << 8) | std::uint8_t(in[8])) &
                    0x7fffffff;
                in.erase(0, 9 + length);
                if (type == 4 && !(flags & 1))
                    out += frame(4, 1, 0, ""); // SETTINGS ACK
                if (type != 1)
                    continue;
                ++requests_; // a request's HEADERS
                switch (how_) {
                case misbehaviour::goaway:
                    out += frame(7, 0, 0, u32(0) + u32(1) + "broken on purpose");
                    break;
                case misbehaviour::reset: out += frame(3, 0, stream, u32(2)); break;
                case misbehaviour::garbage: out += "this is not an HTTP/2 frame\r\n\r\n"; break;
                case misbehaviour::silent: break;
                case misbehaviour::graceful:
                    if (requests_ == 1)
                        out += frame(7, 0, 0, u32(0) + u32(0));
                    else // HEADERS, END_STREAM | END_HEADERS: ":status: 200" is HPACK's static entry 8
                        out += frame(1, 5, stream, "\x88");
                    break;
                }
            }
            if (!out.empty())
                co_await asio::async_write(socket, asio::buffer(out), use_tuple);
        }
    }

    asio::io_context ioc_;
    tcp::acceptor acceptor_;
    misbehaviour how_;
    std::atomic<int> requests_{0};
    std::atomic<int> connections_{0};
    std::thread thread_;
};

// The broken server's run: 2 connections x 2 streams, a new key per request, 1 s timeout.
loadtest_result run_against(const broken_h2_server& server)
{
    return run_loadtest({server.url(), "--http2", "--connections", "2", "--streams", "2", "--mode", "first",
                         "--requests", "8", "--timeout", "1s", "--json"});
}

} // namespace

TEST_SUITE("loadtest http2")
{

    TEST_CASE("h2c with prior knowledge: replay, first and storm modes, executions per key from /metrics")
    {
        loadtest_setup s("http2:\n  cleartext: true\n");
        auto replay =
            run_loadtest({s.url("/api/orders"), "--http2", "--connections", "2", "--streams", "8", "--keys",
                          "30", "--requests", "1500", "--body", "{\"order\":\"{key}\"}", "-H",
                          "Content-Type: application/json", "--metrics", s.metrics_url(), "--json"});
        INFO(replay.output);
        CHECK(replay.exit_status == 0);
        REQUIRE(!replay.summary.empty());
        CHECK(replay.summary.at("protocol").as_string() == "h2c");
        CHECK(int_at(replay.summary, {"streams"}) == 8);
        CHECK(int_at(replay.summary, {"answers"}) == 1500);
        CHECK(int_at(replay.summary, {"status", "201"}) == 1500);
        CHECK(int_at(replay.summary, {"checks", "replays_checked"}) == 1500);
        CHECK(int_at(replay.summary, {"checks", "replays_mismatched"}) == 0);
        CHECK(int_at(replay.summary, {"checks", "replays_unmarked"}) == 0);
        CHECK(int_at(replay.summary, {"executions", "gateway", "executed"}) == 30);
        CHECK(int_at(replay.summary, {"executions", "gateway", "replayed"}) == 1500);
        CHECK(replay.summary.at("executions").as_object().at("per_key").as_double() == 1.0);
        CHECK(int_at(replay.summary, {"bytes", "received"}) > 1500 * 50);
        // The gateway served them over HTTP/2: a connection for the probe, two for the warm-up and
        // two for the timed phase; a stream per request.
        CHECK(gateway_metric(s, "idemgate_http2_connections_total") == 5);
        CHECK(gateway_metric(s, "idemgate_http2_streams_total") == 1530);

        auto first =
            run_loadtest({s.url("/api/orders"), "--http2", "--streams", "4", "--connections", "2", "--mode",
                          "first", "--requests", "200", "--metrics", s.metrics_url(), "--json"});
        INFO(first.output);
        CHECK(first.exit_status == 0);
        REQUIRE(!first.summary.empty());
        CHECK(int_at(first.summary, {"executions", "keys_executed"}) == 200);
        CHECK(int_at(first.summary, {"executions", "gateway", "executed"}) == 200);

        // 16 copies of each key at once over 2 connections x 8 streams: one execution each.
        auto storm = run_loadtest({s.url("/api/orders"), "--http2", "--connections", "2", "--streams", "8",
                                   "--mode", "storm", "--keys", "10", "-H", "X-Test-Delay-Ms: 30",
                                   "--metrics", s.metrics_url(), "--json"});
        INFO(storm.output);
        CHECK(storm.exit_status == 0);
        REQUIRE(!storm.summary.empty());
        CHECK(int_at(storm.summary, {"copies"}) == 16);
        CHECK(int_at(storm.summary, {"status", "201"}) == 10 * 16);
        CHECK(int_at(storm.summary, {"executions", "gateway", "executed"}) == 10);
        CHECK(int_at(storm.summary, {"checks", "keys_executed_more_than_once"}) == 0);
        CHECK(s.upstream.executions() == 30 + 200 + 10);
    }

    TEST_CASE("h2 over TLS by ALPN: replay and first modes; a listener without h2 is refused by name")
    {
        test_certificates certs;
        const std::string tls =
            "tls:\n  cert_file: \"" + certs.server_cert + "\"\n  key_file: \"" + certs.server_key + "\"\n";
        loadtest_setup s(tls);
        auto replay = run_loadtest({s.url("/api/orders", "https"), "--http2", "--cacert", certs.ca_cert,
                                    "--connections", "2", "--streams", "4", "--keys", "10", "--requests",
                                    "400", "--metrics", s.metrics_url(), "--json"});
        INFO(replay.output);
        CHECK(replay.exit_status == 0);
        REQUIRE(!replay.summary.empty());
        CHECK(replay.summary.at("protocol").as_string() == "h2");
        CHECK(int_at(replay.summary, {"checks", "replays_checked"}) == 400);
        CHECK(int_at(replay.summary, {"checks", "replays_mismatched"}) == 0);
        CHECK(int_at(replay.summary, {"executions", "gateway", "executed"}) == 10);
        CHECK(gateway_metric(s, "idemgate_http2_streams_total") == 410);

        // The text report names the protocol and the streams.
        auto first = run_loadtest({s.url("/api/orders", "https"), "--http2", "--cacert", certs.ca_cert,
                                   "--streams", "3", "--connections", "1", "--mode", "first", "--requests",
                                   "60", "--metrics", s.metrics_url()});
        INFO(first.output);
        CHECK(first.exit_status == 0);
        CHECK(first.output.find("1 connections x 3 streams over h2") != std::string::npos);
        CHECK(first.output.find("60 keys executed by this run") != std::string::npos);
        CHECK(first.output.find("1.00 upstream executions per key") != std::string::npos);

        // HTTP/2 off on the TLS listener: ALPN gives http/1.1, which --http2 refuses before the run.
        loadtest_setup h1(tls + "http2:\n  enabled: false\n");
        auto refused = run_loadtest(
            {h1.url("/api/orders", "https"), "--http2", "--cacert", certs.ca_cert, "--requests", "5"});
        INFO(refused.output);
        CHECK(refused.exit_status == 2);
        CHECK(refused.output.find("did not choose h2 by ALPN") != std::string::npos);
    }

    TEST_CASE("a server that sends GOAWAY fails the run with the GOAWAY's code and text")
    {
        broken_h2_server server(misbehaviour::goaway);
        auto r = run_against(server);
        INFO(r.output);
        CHECK(r.exit_status == 1);
        REQUIRE(!r.summary.empty());
        CHECK(int_at(r.summary, {"answers"}) == 0);
        std::string first(r.summary.at("first_error").as_string());
        CHECK(first.find("the server sent GOAWAY (PROTOCOL_ERROR, last stream 0, \"broken on purpose\")") !=
              std::string::npos);
        std::string failure(r.summary.at("failures").as_array().at(0).as_string());
        CHECK(failure.find("8 requests failed without an answer") != std::string::npos);
        CHECK(failure.find("GOAWAY") != std::string::npos);
        CHECK(server.requests() >= 1);
    }

    TEST_CASE("a stream a graceful GOAWAY left unprocessed is sent again on a new connection")
    {
        broken_h2_server server(misbehaviour::graceful);
        auto r = run_loadtest({server.url(), "--http2", "--connections", "1", "--mode", "first", "--requests",
                               "4", "--timeout", "1s", "--json"});
        INFO(r.output);
        CHECK(r.exit_status == 0);
        REQUIRE(!r.summary.empty());
        CHECK(int_at(r.summary, {"status", "200"}) == 4);
        CHECK(int_at(r.summary, {"errors", "read"}) == 0);
        CHECK(int_at(r.summary, {"executions", "keys_executed"}) == 4);
        // The first request twice (refused, then answered), the three others once; the probe's
        // connection, the one the GOAWAY ended, and the next.
        CHECK(server.requests() == 5);
        CHECK(server.connections() == 3);
    }

    TEST_CASE("a server that resets every stream fails the run naming RST_STREAM and its code")
    {
        broken_h2_server server(misbehaviour::reset);
        auto r = run_against(server);
        INFO(r.output);
        CHECK(r.exit_status == 1);
        REQUIRE(!r.summary.empty());
        CHECK(int_at(r.summary, {"errors", "read"}) == 8);
        std::string first(r.summary.at("first_error").as_string());
        CHECK(first.find("the server reset stream") != std::string::npos);
        CHECK(first.find("(RST_STREAM INTERNAL_ERROR)") != std::string::npos);
        CHECK(server.requests() == 8);
    }

    TEST_CASE("a server that sends bytes that are no frame fails the run as a protocol error")
    {
        broken_h2_server server(misbehaviour::garbage);
        auto r = run_against(server);
        INFO(r.output);
        CHECK(r.exit_status == 1);
        REQUIRE(!r.summary.empty());
        CHECK(int_at(r.summary, {"answers"}) == 0);
        std::string first(r.summary.at("first_error").as_string());
        CHECK(first.find("the server broke HTTP/2") != std::string::npos);
        // Its first bytes read as a frame header give a length beyond the frame size allowed.
        CHECK(first.find("GOAWAY FRAME_SIZE_ERROR") != std::string::npos);
        // The text report gives the same line.
        auto text =
            run_loadtest({server.url(), "--http2", "--mode", "first", "--requests", "2", "--timeout", "1s"});
        CHECK(text.exit_status == 1);
        CHECK(text.output.find("result       FAIL") != std::string::npos);
        CHECK(text.output.find("first: the server broke HTTP/2") != std::string::npos);
    }

    TEST_CASE("a server that stops answering: every stream times out after --timeout, and the run ends")
    {
        broken_h2_server server(misbehaviour::silent);
        auto r = run_against(server);
        INFO(r.output);
        CHECK(r.exit_status == 1);
        REQUIRE(!r.summary.empty());
        CHECK(int_at(r.summary, {"errors", "timeout"}) == 8);
        std::string first(r.summary.at("first_error").as_string());
        CHECK(first.find("--timeout 1000 ms") != std::string::npos);
    }

    TEST_CASE("--streams without --http2 is a usage error")
    {
        auto r = run_loadtest({"http://127.0.0.1:1/x", "--streams", "4"});
        CHECK(r.exit_status == 2);
        CHECK(r.output.find("--streams applies to --http2 only") != std::string::npos);
    }

} // TEST_SUITE
