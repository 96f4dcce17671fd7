// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sends finished spans to an OTLP/HTTP collector (JSON, POST <otlp_endpoint>, over TLS for an
// https:// endpoint) from a thread of its own: request threads only move a span into a bounded queue (a full
// queue drops it and counts it); the exporter sends a batch every second or every 512 spans, retries a batch
// the collector could not take (connection failure, 429, 502, 503, 504) with backoff, and on stop flushes
// what is queued within a bounded time.
#include <atomic>
#include <boost/asio/ssl/context.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/tracing.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace idemgate::gateway::detail {

// idemgate_trace_spans_total{result}: exported, dropped_queue, dropped_export.
struct span_export_counters {
    std::atomic<std::uint64_t>& exported;
    std::atomic<std::uint64_t>& dropped_queue;
    std::atomic<std::uint64_t>& dropped_export;
};

// The resource of the gateway's spans: service.name, service.version, service.instance.id (from
// OTEL_RESOURCE_ATTRIBUTES, or a UUID made now: one per process), then the other attributes of
// OTEL_RESOURCE_ATTRIBUTES.
std::vector<tracing::attribute> otlp_resource(const config::tracing_config& t, std::string_view version);

// The client TLS context of an https:// endpoint (tracing.tls: the CA, verification, a client
// certificate, as every client hop of the gateway has them); nullptr for http://. Throws
// config::config_error naming tracing.tls.* keys.
std::shared_ptr<boost::asio::ssl::context> make_otlp_tls(const config::tracing_config& t);

class span_exporter {
public:
    struct options {
        std::string endpoint; // http[s]://host:port/path
        std::vector<std::pair<std::string, std::string>> headers;
        std::vector<tracing::attribute> resource; // of every export (otlp_resource)
        std::string service_version;
        std::shared_ptr<boost::asio::ssl::context> tls; // an https:// endpoint's (make_otlp_tls)
        std::string tls_name;                           // verified and sent as SNI; "" = the host
        bool tls_verify = true;
        std::size_t queue_spans = 8192;
        std::size_t batch_spans = 512;
        std::chrono::milliseconds batch_interval{1000};
        std::chrono::milliseconds timeout{5000};       // each connect, handshake, write and read
        std::chrono::milliseconds flush_timeout{5000}; // stop() waits this long at most
        int attempts = 4;                              // per batch, with 0.25 s, 0.5 s, 1 s between
    };

    span_exporter(options o, span_export_counters counters);
    ~span_exporter();
    span_exporter(const span_exporter&) = delete;
    span_exporter& operator=(const span_exporter&) = delete;

    // Any thread. Never blocks on the network.
    void submit(tracing::span&& s);
    void submit(std::vector<tracing::span>& spans); // moves them out; one lock
    // Sends what is queued (bounded by flush_timeout), then stops the thread. Idempotent.
    void stop();

private:
    void run();
    // POSTs one batch; true when the collector took it (2xx), false to drop it.
    bool send(const std::string& body, const std::chrono::steady_clock::time_point& give_up);
    // One POST over a new connection: the collector's status, or 0 with `failure` set.
    unsigned post_once(const std::string& body, boost::system::error_code& failure);

    options options_;
    span_export_counters counters_;
    std::string host_, port_, target_;
    std::string last_error_; // the send thread's
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<tracing::span> queue_;
    bool stopping_ = false;
    std::chrono::steady_clock::time_point flush_deadline_{};
    std::thread thread_;
};

} // namespace idemgate::gateway::detail
