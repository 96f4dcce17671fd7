// SPDX-License-Identifier: Apache-2.0
#include "redis/client/redis_transport.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <idemgate/common/client_tls.hpp>
#include <idemgate/common/openssl_error.hpp>
#include <idemgate/common/ready_read.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <vector>

namespace idemgate::store::detail {

namespace asio = boost::asio;
namespace ssl = boost::asio::ssl;
using asio::as_tuple;
using asio::use_awaitable;
using boost::system::error_code;

namespace {

// Called by OpenSSL when the server asks for a client certificate and none is configured;
// remembers that it asked (in the transport's flag) and sends none.
// Asio keeps its own pointer in the SSL object's app data: ours gets an index of its own.
int certificate_request_index()
{
    static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
    return index;
}

int note_certificate_request(SSL* ssl, X509**, EVP_PKEY**)
{
    if (auto* requested = static_cast<bool*>(SSL_get_ex_data(ssl, certificate_request_index())))
        *requested = true;
    return 0;
}

} // namespace

redis_tls_context::redis_tls_context(const config::redis_tls_config& cfg)
    : ssl(ssl::context::tls_client), server_name(cfg.server_name), verify(cfg.verify)
{
    std::vector<std::string> problems;
    configure_client_tls(ssl, {cfg.ca_file, cfg.cert_file, cfg.key_file, cfg.verify}, "store.redis.tls.",
                         problems);
    if (cfg.cert_file.empty())
        SSL_CTX_set_client_cert_cb(ssl.native_handle(), &note_certificate_request);
    if (!problems.empty())
        throw config::config_error(std::move(problems));
}

std::shared_ptr<redis_tls_context> make_redis_tls_context(const config::redis_tls_config& cfg)
{
    if (!cfg.enabled)
        return nullptr;
    return std::make_shared<redis_tls_context>(cfg);
}

redis_transport::redis_transport(asio::any_io_executor ex, std::shared_ptr<redis_tls_context> tls)
    : ex_(std::move(ex)), tls_(std::move(tls)), socket_(ex_)
{
}

asio::awaitable<error_code> redis_transport::connect(const std::string& host, std::uint16_t port,
                                                     asio::steady_timer& deadline)
{
    using namespace asio::experimental::awaitable_operators;
    failure_.clear();
    close();
    asio::ip::tcp::socket socket(ex_);

    std::vector<asio::ip::tcp::endpoint> endpoints;
    error_code ec;
    auto ip = asio::ip::make_address(host, ec);
    if (!ec) {
        endpoints.emplace_back(ip, port);
    } else {
        asio::ip::tcp::resolver resolver(ex_);
        auto resolved =
            co_await (resolver.async_resolve(host, std::to_string(port), as_tuple(use_awaitable)) ||
                      deadline.async_wait(as_tuple(use_awaitable)));
        if (resolved.index() == 1)
            co_return make_error_code(asio::error::timed_out);
        auto [rec, results] = std::get<0>(std::move(resolved));
        if (rec)
            co_return rec;
        for (const auto& entry : results)
            endpoints.push_back(entry.endpoint());
    }

    auto connected = co_await (asio::async_connect(socket, endpoints, as_tuple(use_awaitable)) ||
                               deadline.async_wait(as_tuple(use_awaitable)));
    if (connected.index() == 1)
        co_return make_error_code(asio::error::timed_out);
    auto [cec, endpoint] = std::get<0>(connected);
    if (cec)
        co_return cec;
    socket.set_option(asio::ip::tcp::no_delay(true), ec);

    if (!tls_) {
        enable_read_hints(socket); // reads know when a reply emptied the socket
        socket_ = std::move(socket);
        co_return error_code{};
    }
    stream_ = std::make_shared<tls_stream>(std::move(socket), tls_->ssl);
    co_return co_await handshake(host, deadline);
}

asio::awaitable<error_code> redis_transport::handshake(const std::string& host, asio::steady_timer& deadline)
{
    using namespace asio::experimental::awaitable_operators;
    auto stream = stream_;
    SSL* native = stream->native_handle();
    const std::string& name = tls_->server_name.empty() ? host : tls_->server_name;
    std::string why;
    if (!set_peer_name(native, name, tls_->verify, why)) {
        failure_ = "TLS: " + why;
        close();
        co_return make_error_code(asio::error::invalid_argument);
    }

    // A TLS 1.3 server checks the client certificate after our handshake is done, and its
    // refusal ends the first read, which can come after the PING's deadline: remember that it
    // asked, so the log can say so whatever the timing.
    certificate_requested_ = false;
    SSL_set_ex_data(native, certificate_request_index(), &certificate_requested_);
    auto shook = co_await (stream->async_handshake(ssl::stream_base::client, as_tuple(use_awaitable)) ||
                           deadline.async_wait(as_tuple(use_awaitable)));
    SSL_set_ex_data(native, certificate_request_index(), nullptr);
    if (shook.index() == 1) {
        failure_ = "TLS handshake timed out (is the server at this address speaking TLS?)";
        close();
        co_return make_error_code(asio::error::timed_out);
    }
    auto [ec] = std::get<0>(shook);
    if (ec) {
        long verify_result = SSL_get_verify_result(native);
        if (tls_->verify && verify_result != X509_V_OK)
            failure_ = "TLS handshake failed: certificate verify failed: " +
                       std::string(X509_verify_cert_error_string(verify_result)) + " (verifying \"" + name +
                       "\")";
        else
            failure_ = "TLS handshake failed: " + ec.message();
        if (certificate_requested_) // TLS 1.2 refuses a missing client certificate in the handshake
            failure_ +=
                "; the server asked for a client certificate and store.redis.tls.cert_file is not set";
        close();
        co_return ec;
    }
    if (certificate_requested_)
        failure_ = "TLS: the server asked for a client certificate and store.redis.tls.cert_file is not set";
    co_return error_code{};
}

asio::awaitable<redis_transport::result> redis_transport::async_read_some(asio::mutable_buffer buffer)
{
    auto stream = stream_; // alive until the read completes, even if a reconnect replaces stream_
    if (!stream)
        co_return result{make_error_code(asio::error::not_connected), 0};
    auto [ec, n] = co_await stream->async_read_some(buffer, as_tuple(use_awaitable));
    note_tls_error("TLS read failed: ", ec);
    co_return result{ec, n};
}

asio::awaitable<redis_transport::result> redis_transport::async_write(asio::const_buffer buffer)
{
    auto stream = stream_;
    if (!stream)
        co_return result{make_error_code(asio::error::not_connected), 0};
    auto [ec, n] = co_await asio::async_write(*stream, buffer, as_tuple(use_awaitable));
    note_tls_error("TLS write failed: ", ec);
    co_return result{ec, n};
}

void redis_transport::note_tls_error(const char* what, error_code ec)
{
    // A server that refuses our certificate (mutual TLS) says so in an alert that ends the
    // first read after a TLS 1.3 handshake, so a command, not connect(), sees it.
    if (ec && (ec.category() == asio::error::get_ssl_category() ||
               ec.category() == ssl::error::get_stream_category()))
        failure_ += (failure_.empty() ? what : std::string("; ") + what) + ec.message();
}

void redis_transport::close()
{
    error_code ignored;
    if (stream_) {
        stream_->next_layer().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        stream_->next_layer().close(ignored);
    }
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
}

} // namespace idemgate::store::detail
