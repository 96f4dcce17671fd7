// SPDX-License-Identifier: Apache-2.0
#include "observability/span_exporter.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using clock_type = std::chrono::steady_clock;

span_exporter::span_exporter(options o, span_export_counters counters)
    : options_(std::move(o)), counters_(counters)
{
    // The loader checked the form: http://host:port/path.
    std::string_view rest = std::string_view(options_.endpoint).substr(7);
    auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    target_ = slash == std::string_view::npos ? "/" : std::string(rest.substr(slash));
    auto colon = authority.rfind(':');
    host_ = std::string(authority.substr(0, colon));
    if (host_.size() > 2 && host_.front() == '[')
        host_ = host_.substr(1, host_.size() - 2);
    port_ = colon == std::string_view::npos ? "80" : std::string(authority.substr(colon + 1));
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
        auto body = tracing::encode_otlp_json(batch, options_.service_name, options_.service_version);
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

bool span_exporter::send(const std::string& body, const clock_type::time_point& give_up)
{
    auto backoff = std::chrono::milliseconds(250);
    std::string last_error;
    for (int attempt = 1; attempt <= options_.attempts; ++attempt) {
        asio::io_context ioc(1);
        unsigned status = 0;
        boost::system::error_code failure;
        asio::co_spawn(
            ioc,
            [&]() -> asio::awaitable<void> {
                constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
                asio::ip::tcp::resolver resolver(ioc);
                auto [rec, results] = co_await resolver.async_resolve(host_, port_, use_tuple);
                if (rec) {
                    failure = rec;
                    co_return;
                }
                beast::tcp_stream stream(ioc);
                stream.expires_after(options_.timeout);
                auto [cec, ep] = co_await stream.async_connect(results, use_tuple);
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
                stream.expires_after(options_.timeout);
                auto [wec, wn] = co_await http::async_write(stream, req, use_tuple);
                if (wec) {
                    failure = wec;
                    co_return;
                }
                beast::flat_buffer buffer;
                http::response<http::string_body> res;
                stream.expires_after(options_.timeout);
                auto [rec2, rn] = co_await http::async_read(stream, buffer, res, use_tuple);
                if (rec2) {
                    failure = rec2;
                    co_return;
                }
                status = res.result_int();
                boost::system::error_code ignored;
                stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
            },
            asio::detached);
        ioc.run();
        if (status >= 200 && status < 300)
            return true;
        bool retry = failure || status == 429 || status == 502 || status == 503 || status == 504;
        last_error = failure ? failure.message() : "status " + std::to_string(status);
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
