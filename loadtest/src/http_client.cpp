// SPDX-License-Identifier: Apache-2.0
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <idemgate/loadtest/http_client.hpp>
#include <openssl/ssl.h>

namespace idemgate::loadtest {

namespace http = beast::http;

http_client_connection::http_client_connection(asio::any_io_executor executor,
                                               asio::ip::tcp::resolver::results_type endpoints,
                                               std::chrono::nanoseconds timeout, asio::ssl::context* tls,
                                               std::string server_name)
    : executor_(std::move(executor)), endpoints_(std::move(endpoints)), timeout_(timeout), tls_(tls),
      server_name_(std::move(server_name))
{
}

void http_client_connection::close() noexcept
{
    if (connected()) {
        // No TLS close_notify: the load tester drops connections it is done with, as a client
        // that goes away would.
        boost::system::error_code ignored;
        tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        tcp().socket().close(ignored);
    }
    stream_.reset();
    tls_stream_.reset();
    buffer_.clear();
}

asio::awaitable<exchange_error> http_client_connection::connect()
{
    if (connected())
        co_return exchange_error{};
    buffer_.clear();
    if (tls_)
        tls_stream_.emplace(executor_, *tls_);
    else
        stream_.emplace(executor_);
    tcp().expires_after(timeout_);
    auto [ec, endpoint] = co_await tcp().async_connect(endpoints_, use_tuple);
    if (ec) {
        close();
        co_return exchange_error{ec, exchange_stage::connect};
    }
    boost::system::error_code ignored;
    tcp().socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    if (tls_stream_) {
        // SNI, and the certificate must name the URL's host (unless the context verifies nothing).
        if (!SSL_set_tlsext_host_name(tls_stream_->native_handle(), server_name_.c_str())) {
            close();
            co_return exchange_error{asio::error::invalid_argument, exchange_stage::connect};
        }
        tls_stream_->set_verify_callback(asio::ssl::host_name_verification(server_name_), ignored);
        tcp().expires_after(timeout_);
        auto [hs_ec] = co_await tls_stream_->async_handshake(asio::ssl::stream_base::client, use_tuple);
        if (hs_ec) {
            close();
            co_return exchange_error{hs_ec, exchange_stage::connect};
        }
    }
    co_return exchange_error{};
}

template<class Stream>
asio::awaitable<exchange_error> http_client_connection::exchange_on(Stream& stream, std::string_view request,
                                                                    http::response<http::string_body>& res,
                                                                    bool head_request, exchange_bytes* bytes)
{
    tcp().expires_after(timeout_);
    auto [write_ec, written] =
        co_await asio::async_write(stream, asio::buffer(request.data(), request.size()), use_tuple);
    if (bytes)
        bytes->sent += written;
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
        tcp().expires_after(timeout_);
        auto [read_ec, n] = co_await http::async_read(stream, buffer_, parser, use_tuple);
        if (bytes)
            bytes->received += n;
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

asio::awaitable<exchange_error> http_client_connection::exchange(std::string_view request,
                                                                 http::response<http::string_body>& res,
                                                                 bool head_request, exchange_bytes* bytes)
{
    if (!connected()) {
        auto err = co_await connect();
        if (err)
            co_return err;
    }
    if (tls_stream_)
        co_return co_await exchange_on(*tls_stream_, request, res, head_request, bytes);
    co_return co_await exchange_on(*stream_, request, res, head_request, bytes);
}

std::optional<asio::ssl::context> client_tls_context(bool insecure, const std::string& cacert,
                                                     std::string& error)
{
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    ctx.set_options(asio::ssl::context::no_sslv2 | asio::ssl::context::no_sslv3 |
                    asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1);
    boost::system::error_code ec;
    if (insecure) {
        ctx.set_verify_mode(asio::ssl::verify_none);
        return ctx;
    }
    ctx.set_verify_mode(asio::ssl::verify_peer);
    if (!cacert.empty())
        ctx.load_verify_file(cacert, ec);
    else
        ctx.set_default_verify_paths(ec);
    if (ec) {
        error = (cacert.empty() ? std::string("the system's CA certificates") : "--cacert " + cacert) + ": " +
                ec.message();
        return std::nullopt;
    }
    return ctx;
}

} // namespace idemgate::loadtest
