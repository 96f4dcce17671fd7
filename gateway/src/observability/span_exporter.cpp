// SPDX-License-Identifier: Apache-2.0
#include "observability/span_exporter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <idemgate/common/client_tls.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock_type = std::chrono::steady_clock;

namespace ssl = asio::ssl;
using boost::system::error_code;

std::vector<tracing::attribute> otlp_resource(const config::tracing_config& t, std::string_view version)
{
    std::vector<tracing::attribute> out{{"service.name", t.service_name},
                                        {"service.version", std::string(version)}};
    bool has_instance = false;
    for (const auto& [key, value] : t.resource_attributes) {
        out.push_back({key, value});
        has_instance = has_instance || key == "service.instance.id";
    }
    // The semantic conventions ask for a UUID when the ID is generated: this process's, so two
    // replicas of one service never share one and a restart starts a new instance.
    if (!has_instance)
        out.insert(out.begin() + 2, {"service.instance.id", tracing::new_instance_id()});
    return out;
}

std::shared_ptr<ssl::context> make_otlp_tls(const config::tracing_config& t)
{
    if (!t.otlp_endpoint.starts_with("https://"))
        return nullptr;
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_client);
    std::vector<std::string> problems;
    configure_client_tls(*ctx, {t.tls.ca_file, t.tls.cert_file, t.tls.key_file, t.tls.verify}, "tracing.tls.",
                         problems);
    if (!problems.empty())
        throw config::config_error(std::move(problems));
    return ctx;
}

span_exporter::span_exporter(options o, span_export_counters counters)
    : options_(std::move(o)), counters_(counters)
{
    // The loader checked the form: http[s]://host:port/path.
    const bool https = options_.endpoint.starts_with("https://");
    std::string_view rest = std::string_view(options_.endpoint).substr(https ? 8 : 7);
    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    target_ = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
    auto colon = authority.rfind(':');
    host_ = std::string(authority.substr(0, colon));
    if (host_.size() > 2 && host_.front() == '[')
        host_ = host_.substr(1, host_.size() - 2);
    port_ =
        colon == std::string_view::npos ? (https ? "443" : "80") : std::string(authority.substr(colon + 1));
    thread_ = std::thread([this] { run(); });
}

span_exporter::~span_exporter()
{
    stop();
}

void span_exporter::submit(tracing::span&& s)
{
    std::unique_lock lock(mutex_);
    if (stopping_ || queue_.size() >= options_.queue_spans) {
        lock.unlock();
        counters_.dropped_queue.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    queue_.push_back(std::move(s));
    bool full_batch = queue_.size() >= options_.batch_spans;
    lock.unlock();
    if (full_batch)
        wake_.notify_one();
}

void span_exporter::submit(std::vector<tracing::span>& spans)
{
    std::unique_lock lock(mutex_);
    std::size_t dropped = 0;
    for (auto& s : spans) {
        if (stopping_ || queue_.size() >= options_.queue_spans)
            ++dropped;
        else
            queue_.push_back(std::move(s));
    }
    bool full_batch = queue_.size() >= options_.batch_spans;
    lock.unlock();
    spans.clear();
    if (dropped)
        counters_.dropped_queue.fetch_add(dropped, std::memory_order_relaxed);
    if (full_batch)
        wake_.notify_one();
}

void span_exporter::stop()
{
    {
        std::lock_guard lock(mutex_);
        if (stopping_)
            return;
        stopping_ = true;
        flush_deadline_ = clock_type::now() + options_.flush_timeout;
    }
    wake_.notify_one();
    if (thread_.joinable())
        thread_.join();
}

void span_exporter::run()
{
    std::vector<tracing::span> batch;
    for (;;) {
        clock_type::time_point give_up;
        {
            std::unique_lock lock(mutex_);
            wake_.wait_for(lock, options_.batch_interval,
                           [this] { return stopping_ || queue_.size() >= options_.batch_spans; });
            if (queue_.empty()) {
                if (stopping_)
                    return;
                continue;
            }
            auto n = std::min(queue_.size(), options_.batch_spans);
            batch.clear();
            for (std::size_t i = 0; i < n; ++i) {
                batch.push_back(std::move(queue_.front()));
                queue_.pop_front();
            }
            give_up = stopping_ ? flush_deadline_ : clock_type::time_point::max();
        }
        auto body = tracing::encode_otlp_json(batch, options_.resource, options_.service_version);
        if (send(body, give_up))
            counters_.exported.fetch_add(batch.size(), std::memory_order_relaxed);
        else
            counters_.dropped_export.fetch_add(batch.size(), std::memory_order_relaxed);
        std::lock_guard lock(mutex_);
        if (stopping_ && clock_type::now() >= flush_deadline_) {
            counters_.dropped_export.fetch_add(queue_.size(), std::memory_order_relaxed);
            queue_.clear();
            return;
        }
    }
}

namespace {

// Writes the request and reads the answer, each within `timeout`.
template<class Stream>
asio::awaitable<unsigned> exchange(Stream& stream, const http::request<http::string_body>& req,
                                   std::chrono::milliseconds timeout, error_code& failure)
{
    auto& tcp_layer = beast::get_lowest_layer(stream);
    tcp_layer.expires_after(timeout);
    auto [wec, wn] = co_await http::async_write(stream, req, use_tuple);
    if (wec) {
        failure = wec;
        co_return 0;
    }
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    tcp_layer.expires_after(timeout);
    auto [rec, rn] = co_await http::async_read(stream, buffer, res, use_tuple);
    if (rec) {
        failure = rec;
        co_return 0;
    }
    co_return res.result_int();
}

} // namespace

unsigned span_exporter::post_once(const std::string& body, error_code& failure)
{
    asio::io_context ioc(1);
    unsigned status = 0;
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            asio::ip::tcp::resolver resolver(ioc);
            auto [rec, results] = co_await resolver.async_resolve(host_, port_, use_tuple);
            if (rec) {
                failure = rec;
                co_return;
            }
            beast::tcp_stream conn(ioc);
            conn.expires_after(options_.timeout);
            auto [cec, ep] = co_await conn.async_connect(results, use_tuple);
            if (cec) {
                failure = cec;
                co_return;
            }
            http::request<http::string_body> req{http::verb::post, target_, 11};
            req.set(http::field::host, host_ + ":" + port_);
            req.set(http::field::content_type, "application/json");
            req.set(http::field::user_agent, "idemgate/" + options_.service_version);
            for (const auto& [name, value] : options_.headers)
                req.set(name, value);
            req.body() = body;
            req.prepare_payload();
            error_code ignored;
            if (!options_.tls) {
                status = co_await exchange(conn, req, options_.timeout, failure);
                conn.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
                co_return;
            }
            ssl::stream<beast::tcp_stream> stream(std::move(conn), *options_.tls);
            const std::string& name = options_.tls_name.empty() ? host_ : options_.tls_name;
            std::string why;
            if (!set_peer_name(stream.native_handle(), name, options_.tls_verify, why)) {
                failure = make_error_code(asio::error::invalid_argument);
                last_error_ = why;
                co_return;
            }
            beast::get_lowest_layer(stream).expires_after(options_.timeout);
            auto [hec] = co_await stream.async_handshake(ssl::stream_base::client, use_tuple);
            if (hec) {
                failure = hec;
                long verified = SSL_get_verify_result(stream.native_handle());
                last_error_ = options_.tls_verify && verified != X509_V_OK
                                  ? "TLS handshake failed: certificate verify failed: " +
                                        std::string(X509_verify_cert_error_string(verified)) +
                                        " (verifying \"" + name + "\")"
                                  : "TLS handshake failed: " + hec.message();
                co_return;
            }
            status = co_await exchange(stream, req, options_.timeout, failure);
            if (failure)
                co_return;
            // close_notify, within the same deadline (a collector that never answers it costs
            // the timeout once, not a hung exporter).
            beast::get_lowest_layer(stream).expires_after(options_.timeout);
            co_await stream.async_shutdown(use_tuple);
        },
        asio::detached);
    ioc.run();
    return status;
}

bool span_exporter::send(const std::string& body, const clock_type::time_point& give_up)
{
    auto backoff = std::chrono::milliseconds(250);
    std::string last_error;
    for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
        error_code failure;
        last_error_.clear();
        unsigned status = post_once(body, failure);
        if (status >= 200 && status < 300)
            return true;
        bool retry = failure || status == 429 || status == 502 || status == 503 || status == 504;
        last_error = !last_error_.empty() ? last_error_
                     : failure            ? failure.message()
                                          : "status " + std::to_string(status);
        if (!retry || attempt == options_.attempts || clock_type::now() + backoff >= give_up)
            break;
        std::this_thread::sleep_for(backoff);
        backoff *= 2;
    }
    // Rate-limited: one line per ten seconds at most, whatever the span rate.
    static std::atomic<std::int64_t> last_logged{0};
    auto now = log::now_unix_ms();
    if (now - last_logged.load() >= 10000) {
        last_logged.store(now);
        log::warn("trace export failed; spans dropped",
                  {{"otlp_endpoint", options_.endpoint}, {"error", last_error}});
    }
    return false;
}

} // namespace idemgate::gateway::detail
