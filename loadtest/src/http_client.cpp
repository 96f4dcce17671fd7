#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <idemgate/loadtest/http_client.hpp>

namespace idemgate::loadtest {

namespace http = beast::http;

http_client_connection::http_client_connection(asio::any_io_executor executor,
                                               asio::ip::tcp::resolver::results_type endpoints,
                                               std::chrono::nanoseconds timeout)
    : executor_(std::move(executor)), endpoints_(std::move(endpoints)), timeout_(timeout)
{
}

void http_client_connection::close() noexcept
{
    if (stream_) {
        boost::system::error_code ignored;
        stream_->socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        stream_->socket().close(ignored);
        stream_.reset();
    }
    buffer_.clear();
}

asio::awaitable<exchange_error> http_client_connection::connect()
{
    if (stream_)
        co_return exchange_error{};
    buffer_.clear();
    stream_.emplace(executor_);
    stream_->expires_after(timeout_);
    auto [ec, endpoint] = co_await stream_->async_connect(endpoints_, asio::as_tuple(asio::use_awaitable));
    if (ec) {
        close();
        co_return exchange_error{ec, exchange_stage::connect};
    }
    boost::system::error_code ignored;
    stream_->socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    co_return exchange_error{};
}

asio::awaitable<exchange_error> http_client_connection::exchange(std::string_view request,
                                                                 http::response<http::string_body>& res,
                                                                 bool head_request)
{
    if (!stream_) {
        auto err = co_await connect();
        if (err)
            co_return err;
    }
    stream_->expires_after(timeout_);
    auto [write_ec, written] = co_await asio::async_write(
        *stream_, asio::buffer(request.data(), request.size()), asio::as_tuple(asio::use_awaitable));
    if (write_ec) {
        close();
        co_return exchange_error{write_ec, exchange_stage::write};
    }
    for (;;) {
        // A new parser per message, limits set before the header is read.
        http::response_parser<http::string_body> parser;
        parser.body_limit(body_limit);
        parser.header_limit(64 * 1024);
        if (head_request)
            parser.skip(true);
        stream_->expires_after(timeout_);
        auto [read_ec, n] =
            co_await http::async_read(*stream_, buffer_, parser, asio::as_tuple(asio::use_awaitable));
        if (read_ec) {
            close();
            co_return exchange_error{read_ec, exchange_stage::read};
        }
        unsigned status = parser.get().result_int();
        if (status >= 100 && status < 200 && status != 101)
            continue; // interim answer (100 Continue, 103 Early Hints): the final one follows
        res = parser.release();
        break;
    }
    if (!res.keep_alive())
        close();
    co_return exchange_error{};
}

} // namespace idemgate::loadtest
