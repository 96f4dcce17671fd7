// SPDX-License-Identifier: Apache-2.0
// OpenTelemetry traces through the real binary: an OTLP/HTTP receiver in this test (a socket
// that takes POSTs and keeps their JSON bodies, as a collector's OTLP/HTTP receiver would) gets
// a server span per sampled request and client spans for the store operations and the upstream
// exchange, with the parent/child IDs of W3C Trace Context; the upstream gets a traceparent that
// names the exchange's span.
#include "gateway_fixture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <csignal>
#include <doctest/doctest.h>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

using namespace idemgate::test;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace json = boost::json;

namespace {

// Answers every POST with `status` and keeps the bodies.
class otlp_receiver {
public:
    explicit otlp_receiver(unsigned status = 200) : status_(status)
    {
        acceptor_.open(asio::ip::tcp::v4());
        acceptor_.set_option(asio::ip::tcp::acceptor::reuse_address(true));
        acceptor_.bind({asio::ip::make_address("127.0.0.1"), 0});
        acceptor_.listen();
        asio::co_spawn(ioc_, accept_loop(), asio::detached);
        thread_ = std::thread([this] { ioc_.run(); }); // returns once the destructor closed everything
    }
    // Closes the acceptor and every connection on the receiver's thread and lets run() return
    // once nothing is pending: an io_context stopped or destroyed with an accept still queued
    // frees it after its socket service under io_uring (Asio 1.81).
    ~otlp_receiver()
    {
        asio::post(ioc_, [this] {
            boost::system::error_code ignored;
            acceptor_.close(ignored);
            for (auto& weak : streams_)
                if (auto stream = weak.lock())
                    stream->socket().close(ignored);
        });
        thread_.join();
    }
    std::string endpoint() const
    {
        return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()) + "/v1/traces";
    }
    std::vector<std::string> bodies()
    {
        std::lock_guard lock(mutex_);
        return bodies_;
    }
    int posts()
    {
        std::lock_guard lock(mutex_);
        return posts_;
    }

private:
    asio::awaitable<void> accept_loop()
    {
        for (;;) {
            boost::system::error_code ec;
            auto socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return; // closed by the destructor
            auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
            streams_.push_back(stream);
            asio::co_spawn(ioc_, serve(std::move(stream)), asio::detached);
        }
    }
    asio::awaitable<void> serve(std::shared_ptr<beast::tcp_stream> owned)
    {
        auto& stream = *owned;
        beast::flat_buffer buffer;
        for (;;) {
            beast::http::request<beast::http::string_body> req;
            boost::system::error_code ec;
            co_await beast::http::async_read(stream, buffer, req,
                                             asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return;
            {
                std::lock_guard lock(mutex_);
                ++posts_;
                if (req.method() == beast::http::verb::post && req.target() == "/v1/traces" &&
                    req[beast::http::field::content_type] == "application/json")
                    bodies_.push_back(req.body());
            }
            beast::http::response<beast::http::string_body> res{beast::http::int_to_status(status_), 11};
            res.set(beast::http::field::content_type, "application/json");
            res.body() = "{}";
            res.prepare_payload();
            co_await beast::http::async_write(stream, res, asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return;
        }
    }

    unsigned status_;
    asio::io_context ioc_{1};
    asio::ip::tcp::acceptor acceptor_{ioc_};
    std::vector<std::weak_ptr<beast::tcp_stream>> streams_; // the receiver's thread only
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> bodies_;
    int posts_ = 0;
};

// Every span of every export, flattened.
std::vector<json::object> spans_of(const std::vector<std::string>& bodies)
{
    std::vector<json::object> out;
    for (const auto& b : bodies) {
        auto doc = json::parse(b).as_object();
        for (auto& rs : doc.at("resourceSpans").as_array()) {
            auto& attrs = rs.at("resource").at("attributes").as_array();
            CHECK(attrs.at(0).at("key") == "service.name");
            for (auto& ss : rs.at("scopeSpans").as_array())
                for (auto& s : ss.at("spans").as_array())
                    out.push_back(s.as_object());
        }
    }
    return out;
}

std::string attribute(const json::object& span, std::string_view key)
{
    for (auto& a : span.at("attributes").as_array()) {
        if (a.at("key").as_string() != key)
            continue;
        auto& v = a.at("value").as_object();
        if (auto* s = v.if_contains("stringValue"))
            return std::string(s->as_string());
        if (auto* i = v.if_contains("intValue"))
            return std::string(i->as_string());
        if (auto* b = v.if_contains("boolValue"))
            return b->as_bool() ? "true" : "false";
    }
    return "<absent>";
}

std::string text(const json::value& v)
{
    return v.is_string() ? std::string(v.as_string()) : std::string();
}

// The traceparent the test upstream received, from its JSON echo.
std::string upstream_traceparent(const http_response& r)
{
    auto doc = json::parse(r.body).as_object();
    auto& headers = doc.at("headers").as_object();
    auto* tp = headers.if_contains("traceparent");
    return tp ? std::string(tp->as_string()) : std::string();
}

} // namespace

TEST_SUITE_BEGIN("tracing");

TEST_CASE("sampled requests export a server span with store and upstream children; the upstream continues "
          "the trace")
{
    otlp_receiver collector;
    gateway_options options;
    // Behind a trusted balancer (127.0.0.1): the replay names its client in X-Forwarded-For.
    options.top_level = "listen:\n  address: \"${LISTEN}\"\n  trusted_proxies: [127.0.0.1/32]\n"
                        "tracing:\n  otlp_endpoint: \"" +
                        collector.endpoint() + "\"\n  sample_ratio: 1.0\n";
    gateway_fixture f(options);

    const std::string trace = "4bf92f3577b34da6a3ce929d0e0e4736", caller = "00f067aa0ba902b7";
    auto key = unique_key("traced");
    auto first =
        http_request(f.port(), "POST", "/api/orders",
                     {{"Idempotency-Key", key}, {"traceparent", "00-" + trace + "-" + caller + "-01"}}, "{}");
    REQUIRE(first.status == 201);
    auto sent = upstream_traceparent(first);
    REQUIRE(sent.size() == 55);
    CHECK(sent.substr(3, 32) == trace);   // the same trace
    CHECK(sent.substr(36, 16) != caller); // the exchange's span, not the caller's
    CHECK(sent.ends_with("-01"));
    auto replay = http_request(f.port(), "POST", "/api/orders",
                               {{"Idempotency-Key", key},
                                {"traceparent", "00-" + trace + "-" + caller + "-01"},
                                {"X-Forwarded-For", "203.0.113.7"}},
                               "{}");
    CHECK(replay.header("idempotent-replayed") == "true");
    // The caller decided not to sample: nothing exported, but the upstream still continues it.
    auto unsampled = http_request(f.port(), "POST", "/api/orders",
                                  {{"Idempotency-Key", unique_key("unsampled")},
                                   {"traceparent", "00-" + std::string(32, 'a') + "-" + caller + "-00"}},
                                  "{}");
    auto unsampled_sent = upstream_traceparent(unsampled);
    CHECK(unsampled_sent.substr(3, 32) == std::string(32, 'a'));
    CHECK(unsampled_sent.ends_with("-00"));
    // No traceparent: a new trace (ratio 1.0: sampled).
    auto fresh =
        http_request(f.port(), "POST", "/api/orders", {{"Idempotency-Key", unique_key("fresh")}}, "{}");
    CHECK(upstream_traceparent(fresh).ends_with("-01"));

    // The drain flushes what is queued.
    f.process().signal(SIGTERM);
    REQUIRE(f.process().wait_exit(15s) == 0);
    auto spans = spans_of(collector.bodies());
    REQUIRE_MESSAGE(!spans.empty(), f.process().output());

    std::vector<json::object> servers, in_trace;
    for (auto& s : spans) {
        CHECK(text(s.at("traceId")) != std::string(32, 'a')); // the unsampled request exported nothing
        if (text(s.at("traceId")) == trace)
            in_trace.push_back(s);
    }
    for (auto& s : in_trace)
        if (s.at("kind") == 2)
            servers.push_back(s);
    REQUIRE(servers.size() == 2); // the execution and the replay
    const json::object* executed = nullptr;
    const json::object* replayed = nullptr;
    for (auto& s : servers) {
        CHECK(text(s.at("parentSpanId")) == caller);
        CHECK(text(s.at("name")) == "POST /api/");
        CHECK(attribute(s, "http.request.method") == "POST");
        CHECK(attribute(s, "http.route") == "/api/");
        CHECK(attribute(s, "url.path") == "/api/orders");
        CHECK(attribute(s, "http.response.status_code") == "201");
        CHECK(attribute(s, "idemgate.tenant") == "<absent>"); // not without record_tenant
        (attribute(s, "idemgate.outcome") == "executed" ? executed : replayed) = &s;
    }
    REQUIRE(executed);
    REQUIRE(replayed);
    CHECK(attribute(*replayed, "idemgate.outcome") == "replayed");
    // client.address: the client; network.peer.address: the connection's peer.
    CHECK(attribute(*executed, "client.address") == "127.0.0.1");
    CHECK(attribute(*replayed, "client.address") == "203.0.113.7");
    CHECK(attribute(*replayed, "network.peer.address") == "127.0.0.1");
    // The execution's children: reserve, the upstream exchange (whose ID the upstream got), complete.
    std::set<std::string> executed_children, replay_children;
    bool upstream_span_matches = false;
    for (auto& s : in_trace) {
        if (s.at("kind") != 3)
            continue;
        std::string name(s.at("name").as_string());
        if (s.at("parentSpanId") == executed->at("spanId"))
            executed_children.insert(name);
        if (s.at("parentSpanId") == replayed->at("spanId"))
            replay_children.insert(name);
        if (name == "upstream orders") {
            upstream_span_matches = text(s.at("spanId")) == sent.substr(36, 16);
            CHECK(attribute(s, "http.response.status_code") == "201");
        }
        CHECK(std::stoull(std::string(s.at("startTimeUnixNano").as_string())) <=
              std::stoull(std::string(s.at("endTimeUnixNano").as_string())));
    }
    CHECK(executed_children ==
          std::set<std::string>{"idemgate.store reserve", "upstream orders", "idemgate.store complete"});
    CHECK(replay_children == std::set<std::string>{"idemgate.store reserve"}); // answered from the store
    CHECK(upstream_span_matches);
}

TEST_CASE("a collector that refuses the spans: requests are unaffected, the spans are counted as dropped")
{
    otlp_receiver collector(400); // a payload it will never take: not retried
    gateway_options options;
    options.top_level = "tracing:\n  otlp_endpoint: \"" + collector.endpoint() + "\"\n  sample_ratio: 1.0\n";
    gateway_fixture f(options);
    for (int i = 0; i < 5; ++i)
        CHECK(
            http_request(f.port(), "POST", "/api/orders", {{"Idempotency-Key", unique_key("refused")}}, "{}")
                .status == 201);
    auto deadline = std::chrono::steady_clock::now() + 5s;
    double dropped = 0;
    while (std::chrono::steady_clock::now() < deadline &&
           (dropped =
                metric(f.gateway->admin_port(), "idemgate_trace_spans_total{result=\"dropped_export\"}")) < 5)
        std::this_thread::sleep_for(50ms);
    CHECK(dropped >= 5); // five server spans at least
    CHECK(metric(f.gateway->admin_port(), "idemgate_trace_spans_total{result=\"exported\"}") == 0);
    CHECK(collector.posts() >= 1);
}

TEST_CASE("tracing off: a traceparent is forwarded unchanged and nothing is exported")
{
    gateway_fixture f;
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto r = http_request(f.port(), "POST", "/api/orders",
                          {{"Idempotency-Key", unique_key("off")}, {"traceparent", tp}}, "{}");
    CHECK(upstream_traceparent(r) == tp);
    CHECK(metric(f.gateway->admin_port(), "idemgate_trace_spans_total{result=\"exported\"}") == 0);
}

TEST_SUITE_END();
