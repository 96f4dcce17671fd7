// SPDX-License-Identifier: Apache-2.0
// OpenTelemetry traces through the real binary: an OTLP/HTTP receiver in this test (a socket
// that takes POSTs and keeps their JSON bodies, as a collector's OTLP/HTTP receiver would) gets
// a server span per sampled request and client spans for the store operations and the upstream
// exchange, with the parent/child IDs of W3C Trace Context; the upstream gets a traceparent that
// names the exchange's span. The same receiver over TLS (certificates made by the openssl CLI)
// shows export to an https:// collector, the OpenTelemetry SDK environment variables under the
// file's keys, and the resource the spans carry.
#include "gateway_fixture.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>
#include <cctype>
#include <csignal>
#include <doctest/doctest.h>
#include <idemgate/test/tls.hpp>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

using namespace idemgate::test;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace json = boost::json;

namespace {

// Answers every POST with `status` and keeps the bodies; over TLS with `cert` and `key` (a
// handshake the client breaks off is counted).
class otlp_receiver {
public:
    explicit otlp_receiver(unsigned status = 200, const std::string& cert = {}, const std::string& key = {})
        : status_(status)
    {
        if (!cert.empty()) {
            tls_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
            tls_->use_certificate_chain_file(cert);
            tls_->use_private_key_file(key, asio::ssl::context::pem);
        }
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
    // The base URL (OTEL_EXPORTER_OTLP_ENDPOINT's form) and the traces URL.
    std::string base() const
    {
        return (tls_ ? "https://127.0.0.1:" : "http://127.0.0.1:") +
               std::to_string(acceptor_.local_endpoint().port());
    }
    std::string endpoint() const { return base() + "/v1/traces"; }
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
    int failed_handshakes()
    {
        std::lock_guard lock(mutex_);
        return failed_handshakes_;
    }
    std::vector<std::string> tokens() // the x-otlp-token header of each POST
    {
        std::lock_guard lock(mutex_);
        return tokens_;
    }

private:
    using tls_stream = asio::ssl::stream<beast::tcp_stream>;
    asio::awaitable<void> accept_loop()
    {
        for (;;) {
            boost::system::error_code ec;
            auto socket = co_await acceptor_.async_accept(asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return; // closed by the destructor
            if (tls_) {
                auto stream = std::make_shared<tls_stream>(beast::tcp_stream(std::move(socket)), *tls_);
                streams_.push_back(std::shared_ptr<beast::tcp_stream>(stream, &stream->next_layer()));
                asio::co_spawn(ioc_, serve_tls(std::move(stream)), asio::detached);
            } else {
                auto stream = std::make_shared<beast::tcp_stream>(std::move(socket));
                streams_.push_back(stream);
                asio::co_spawn(ioc_, serve(std::move(stream)), asio::detached);
            }
        }
    }
    asio::awaitable<void> serve_tls(std::shared_ptr<tls_stream> owned)
    {
        boost::system::error_code ec;
        owned->next_layer().expires_after(10s);
        co_await owned->async_handshake(asio::ssl::stream_base::server,
                                        asio::redirect_error(asio::use_awaitable, ec));
        owned->next_layer().expires_never();
        if (ec) {
            std::lock_guard lock(mutex_);
            ++failed_handshakes_;
            co_return;
        }
        co_await serve(std::move(owned));
    }
    template<class Stream>
    asio::awaitable<void> serve(std::shared_ptr<Stream> owned)
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
                tokens_.emplace_back(req["x-otlp-token"]);
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
    std::unique_ptr<asio::ssl::context> tls_;
    asio::io_context ioc_{1};
    asio::ip::tcp::acceptor acceptor_{ioc_};
    std::vector<std::weak_ptr<beast::tcp_stream>> streams_; // the receiver's thread only
    std::thread thread_;
    std::mutex mutex_;
    std::vector<std::string> bodies_;
    std::vector<std::string> tokens_;
    int posts_ = 0;
    int failed_handshakes_ = 0;
};

// The resource attributes of each export (string values), in order of arrival.
std::vector<std::map<std::string, std::string>> resources_of(const std::vector<std::string>& bodies)
{
    std::vector<std::map<std::string, std::string>> out;
    for (const auto& b : bodies) {
        auto doc = json::parse(b); // kept: a range-for over a temporary's member dangles
        for (auto& rs : doc.as_object().at("resourceSpans").as_array()) {
            auto& resource = out.emplace_back();
            for (auto& a : rs.at("resource").at("attributes").as_array())
                if (auto* v = a.at("value").as_object().if_contains("stringValue"))
                    resource[std::string(a.at("key").as_string())] = std::string(v->as_string());
        }
    }
    return out;
}

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

namespace {

bool is_uuid_v4(const std::string& id)
{
    if (id.size() != 36 || id[14] != '4')
        return false;
    for (std::size_t i = 0; i < id.size(); ++i)
        if ((i == 8 || i == 13 || i == 18 || i == 23) ? id[i] != '-'
                                                      : !std::isxdigit(static_cast<unsigned char>(id[i])))
            return false;
    return true;
}

std::string tracing_tls(const test_certificates& certs)
{
    return "tracing:\n  sample_ratio: 1.0\n  tls:\n    ca_file: \"" + certs.ca_cert + "\"\n";
}

} // namespace

TEST_CASE("an https:// collector from OTEL_EXPORTER_OTLP_ENDPOINT gets the spans, with the environment's "
          "resource and one service.instance.id per process" *
          needs_store("memory"))
{
    test_certificates certs;
    otlp_receiver collector(200, certs.server_cert, certs.server_key);
    gateway_options options;
    options.top_level = tracing_tls(certs); // no otlp_endpoint, no service_name in the file
    options.env = {{"OTEL_EXPORTER_OTLP_ENDPOINT", collector.base()}, // the gateway appends /v1/traces
                   {"OTEL_SERVICE_NAME", "orders-edge"},
                   {"OTEL_RESOURCE_ATTRIBUTES",
                    "deployment.environment.name=staging, team=pay%2Cments,service.name=not-this"},
                   {"OTEL_EXPORTER_OTLP_HEADERS", "x-otlp-token=s3cret%20token"}};
    gateway_fixture f(options);

    // Two exports from one process (the second request after the first batch arrived).
    REQUIRE(f.post("/api/orders", unique_key("tls-1"), "{}").status == 201);
    wait_until("the first export", 10s, [&] { return collector.bodies().size() >= 1; });
    REQUIRE(f.post("/api/orders", unique_key("tls-2"), "{}").status == 201);
    wait_until("the second export", 10s, [&] { return collector.bodies().size() >= 2; });
    // A second process of the same service: another instance.
    auto another = f.start_another();
    REQUIRE(
        http_request(another->port(), "POST", "/api/orders", {{"Idempotency-Key", unique_key("tls-3")}}, "{}")
            .status == 201);
    wait_until("the other process's export", 10s, [&] { return collector.bodies().size() >= 3; });

    auto resources = resources_of(collector.bodies());
    REQUIRE(resources.size() >= 3);
    std::set<std::string> instances;
    for (auto& r : resources) {
        CHECK(r["service.name"] == "orders-edge"); // OTEL_SERVICE_NAME over the attributes' service.name
        CHECK(r["deployment.environment.name"] == "staging");
        CHECK(r["team"] == "pay,ments"); // percent-decoded
        CHECK(!r["service.version"].empty());
        CHECK_MESSAGE(is_uuid_v4(r["service.instance.id"]), r["service.instance.id"]);
        instances.insert(r["service.instance.id"]);
    }
    CHECK(resources[0]["service.instance.id"] == resources[1]["service.instance.id"]); // one process
    CHECK(instances.size() == 2);                                                      // two processes
    CHECK(!spans_of(collector.bodies()).empty());
    for (const auto& token : collector.tokens())
        CHECK(token == "s3cret token");
    CHECK(collector.failed_handshakes() == 0);
}

TEST_CASE(
    "the file's otlp_endpoint and service_name win over the environment; OTEL_SDK_DISABLED turns tracing "
    "off" *
    needs_store("memory"))
{
    otlp_receiver named_in_file, named_in_env;
    gateway_options options;
    options.top_level = "tracing:\n  otlp_endpoint: \"" + named_in_file.endpoint() +
                        "\"\n  service_name: from-file\n  sample_ratio: 1.0\n";
    options.env = {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", named_in_env.endpoint()},
                   {"OTEL_SERVICE_NAME", "from-env"},
                   {"OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=edge-7,bad entry"}};
    gateway_fixture f(options);
    REQUIRE(f.post("/api/orders", unique_key("file-wins"), "{}").status == 201);
    wait_until("an export", 10s, [&] { return !named_in_file.bodies().empty(); });
    auto resource = resources_of(named_in_file.bodies()).at(0);
    CHECK(resource["service.name"] == "from-file");
    // A malformed OTEL_RESOURCE_ATTRIBUTES is not used at all, and says so.
    CHECK(is_uuid_v4(resource["service.instance.id"]));
    CHECK(f.process()
              .wait_for_line(
                  [](const std::string& l) {
                      return l.find("OTEL_RESOURCE_ATTRIBUTES: entry 2") != std::string::npos;
                  },
                  2s)
              .has_value());
    CHECK(named_in_env.posts() == 0);

    // The per-signal variable is used as it is; a well-formed service.instance.id is taken.
    otlp_receiver other;
    gateway_options env_only;
    env_only.top_level = "tracing:\n  sample_ratio: 1.0\n";
    env_only.env = {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", other.endpoint()},
                    {"OTEL_RESOURCE_ATTRIBUTES", "service.instance.id=edge-7"}};
    gateway_fixture g(env_only);
    REQUIRE(g.post("/api/orders", unique_key("env-only"), "{}").status == 201);
    wait_until("an export", 10s, [&] { return !other.bodies().empty(); });
    auto env_resource = resources_of(other.bodies()).at(0);
    CHECK(env_resource["service.instance.id"] == "edge-7");
    CHECK(env_resource["service.name"] == "idemgate");

    // OTEL_SDK_DISABLED=true: no exporter even though the file names a collector.
    otlp_receiver unused;
    gateway_options disabled;
    disabled.top_level = "tracing:\n  otlp_endpoint: \"" + unused.endpoint() + "\"\n  sample_ratio: 1.0\n";
    disabled.env = {{"OTEL_SDK_DISABLED", "TRUE"}};
    gateway_fixture h(disabled);
    const std::string tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    auto r = http_request(h.port(), "POST", "/api/orders",
                          {{"Idempotency-Key", unique_key("off")}, {"traceparent", tp}}, "{}");
    CHECK(upstream_traceparent(r) == tp); // forwarded unchanged: no span of the gateway's
    h.process().signal(SIGTERM);
    REQUIRE(h.process().wait_exit(15s) == 0);
    CHECK(unused.posts() == 0);
}

TEST_CASE("an https:// collector the gateway cannot verify gets nothing; requests are unaffected" *
          needs_store("memory"))
{
    test_certificates certs;
    // Signed by the trusted CA, for another name; and a certificate of a CA the system does not know.
    otlp_receiver wrong_name(200, certs.wrong_name_cert, certs.wrong_name_key);
    otlp_receiver unknown_ca(200, certs.server_cert, certs.server_key);
    gateway_options named;
    named.top_level = tracing_tls(certs) + "  otlp_endpoint: \"" + wrong_name.endpoint() + "\"\n";
    gateway_options system_store; // no ca_file: the system's CA store, verification on
    system_store.top_level =
        "tracing:\n  sample_ratio: 1.0\n  otlp_endpoint: \"" + unknown_ca.endpoint() + "\"\n";
    gateway_fixture f(named), g(system_store);
    for (int i = 0; i < 3; ++i) {
        CHECK(f.post("/api/orders", unique_key("unverified"), "{}").status == 201);
        CHECK(g.post("/api/orders", unique_key("unverified"), "{}").status == 201);
    }
    for (auto* gw : {&f, &g})
        wait_until("the spans counted as dropped", 15s, [&] {
            return metric(gw->gateway->admin_port(),
                          "idemgate_trace_spans_total{result=\"dropped_export\"}") >= 3;
        });
    CHECK(f.process()
              .wait_for_line(
                  [](const std::string& l) {
                      return l.find("trace export failed") != std::string::npos &&
                             l.find("certificate verify failed") != std::string::npos;
                  },
                  2s)
              .has_value());
    for (auto* collector : {&wrong_name, &unknown_ca}) {
        CHECK(collector->bodies().empty());
        CHECK(collector->failed_handshakes() >= 1);
    }
    CHECK(metric(f.gateway->admin_port(), "idemgate_trace_spans_total{result=\"exported\"}") == 0);
}

TEST_SUITE_END();
