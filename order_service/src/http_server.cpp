// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <exception>
#include <idemgate/common/log.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <idemgate/order_service/http_api.hpp>

namespace idemgate::order_service {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using asio::ip::tcp;

// Runs blocking `work` on `pool` and resumes the awaiting coroutine on its own executor with
// the result.
//
// Why a separate pool: every handler talks to SQLite, whose calls block (a busy_timeout wait
// for the write lock can last seconds under contention). Running them on the io threads would
// stall every other connection served by that thread, so the io threads only parse and write
// HTTP, and the handler runs on an asio::thread_pool sized for the database. The work guard
// keeps the io_context from running out of work while the result is on its way back.
template<class Work>
asio::awaitable<http_response> run_blocking(asio::thread_pool& pool, Work work)
{
    auto initiate = [&pool, work = std::move(work)](auto handler) mutable {
        auto io = asio::get_associated_executor(handler);
        asio::post(pool, [work = std::move(work), handler = std::move(handler),
                          guard = asio::make_work_guard(io)]() mutable {
            http_response res = work();
            auto ex = guard.get_executor();
            asio::post(ex, [handler = std::move(handler), res = std::move(res)]() mutable {
                std::move(handler)(std::move(res));
            });
        });
    };
    auto result = asio::async_initiate<decltype(asio::use_awaitable), void(http_response)>(
        std::move(initiate), asio::use_awaitable);
    http_response res = co_await std::move(result);
    co_return res;
}

} // namespace

http_server::http_server(asio::io_context& ioc, asio::thread_pool& db_pool, api& handler,
                         const tcp::endpoint& endpoint, server_limits limits)
    : ioc_(ioc), db_pool_(db_pool), handler_(handler), acceptor_(ioc, endpoint), limits_(limits)
{
}

void http_server::start()
{
    asio::co_spawn(ioc_, accept_loop(), [](std::exception_ptr e) {
        if (e) {
            try {
                std::rethrow_exception(e);
            } catch (const std::exception& ex) {
                log::error("accept_loop_failed", {{"error", ex.what()}});
            }
        }
    });
}

void http_server::stop()
{
    boost::system::error_code ignored;
    acceptor_.close(ignored);
}

asio::awaitable<void> http_server::accept_loop()
{
    while (acceptor_.is_open()) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || !acceptor_.is_open())
                co_return;
            log::warn("accept_failed", {{"error", ec.message()}});
            continue;
        }
        asio::co_spawn(ioc_, serve(std::move(socket)), [](std::exception_ptr e) {
            if (e) {
                try {
                    std::rethrow_exception(e);
                } catch (const std::exception& ex) {
                    log::warn("connection_failed", {{"error", ex.what()}});
                }
            }
        });
    }
}

asio::awaitable<void> http_server::serve(tcp::socket socket)
{
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
        // A fresh parser per message, with its limits set before the header is read.
        http::request_parser<http::string_body> parser;
        parser.header_limit(static_cast<std::uint32_t>(limits_.max_header));
        parser.body_limit(limits_.max_body);
        stream.expires_after(limits_.read_timeout);
        auto [rec, nread] = co_await http::async_read(stream, buffer, parser, use_tuple);
        http_response res;
        bool keep_alive = false;
        if (rec == http::error::end_of_stream || rec == beast::error::timeout ||
            rec == asio::error::connection_reset || rec == asio::error::eof) {
            break;
        } else if (rec == http::error::body_limit) {
            res = problem(413, "about:blank", "Content Too Large", "the request body exceeds the limit");
        } else if (rec == http::error::header_limit) {
            res = problem(431, "about:blank", "Request Header Fields Too Large",
                          "the request header is too large");
        } else if (rec) {
            res = problem(400, "about:blank", "Bad Request", "malformed HTTP request: " + rec.message());
        } else {
            http_request req = parser.release();
            keep_alive = req.keep_alive();
            unsigned version = req.version();
            api& handler = handler_;
            // The request moves into the job, so it lives as long as the job, whatever happens
            // to this coroutine. (A separate statement: GCC 12 mishandles lambdas inside co_await.)
            auto job = [&handler, req = std::move(req)] { return handler.handle(req); };
            auto pending = run_blocking(db_pool_, std::move(job));
            res = co_await std::move(pending);
            res.version(version);
        }
        res.keep_alive(keep_alive);
        res.prepare_payload();
        stream.expires_after(limits_.write_timeout);
        auto [wec, nwritten] = co_await http::async_write(stream, res, use_tuple);
        if (wec || !keep_alive)
            break;
    }
    boost::system::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
    // Lingering close: a request refused before its body was read (413, 431, 400) may still be
    // arriving; closing with unread input sends a RST that can destroy our answer in flight.
    // Read and drop what comes for a bounded time and size, as nginx's lingering_close does.
    stream.expires_after(std::chrono::seconds(2));
    std::array<char, 16 * 1024> sink;
    for (std::size_t dropped = 0; dropped < 8 * limits_.max_body;) {
        auto [ec, n] = co_await stream.async_read_some(asio::buffer(sink), use_tuple);
        if (ec)
            break;
        dropped += n;
    }
}

} // namespace idemgate::order_service
