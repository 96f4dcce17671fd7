// SPDX-License-Identifier: Apache-2.0
#pragma once
// The byte stream under one Redis connection: plain TCP, or TLS over TCP (managed
// Redis). Private to the store library; redis_connection reads and writes through it without
// knowing which.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>
#include <idemgate/config/config.hpp>
#include <memory>
#include <string>
#include <tuple>

namespace idemgate::store::detail {

// What every TLS connection of one backend shares: one OpenSSL context (TLS 1.2+, the CA to
// verify against, the client certificate) built once from the config, and the name to verify.
struct redis_tls_context {
    // Throws config::config_error naming the key (store.redis.tls.*) of a file OpenSSL refuses
    // or a private key that does not match its certificate.
    explicit redis_tls_context(const config::redis_tls_config& cfg);

    boost::asio::ssl::context ssl;
    const std::string server_name; // "" = the host connected to
    const bool verify;
};

// The shared TLS context of a backend, or nullptr when store.redis.tls.enabled is false.
std::shared_ptr<redis_tls_context> make_redis_tls_context(const config::redis_tls_config& cfg);

// Plain TCP socket or TLS stream. One read and one write may be in flight at a time; all on
// the executor given at construction.
class redis_transport {
public:
    using result = std::tuple<boost::system::error_code, std::size_t>;

    redis_transport(boost::asio::any_io_executor ex, std::shared_ptr<redis_tls_context> tls);

    // Resolves `host`, connects, and with TLS does the handshake (SNI and verification against
    // server_name, else `host`), all before `deadline` expires; its expiry or cancel() ends the
    // attempt with timed_out. On failure the transport is closed and failure() says why.
    boost::asio::awaitable<boost::system::error_code> connect(const std::string& host, std::uint16_t port,
                                                              boost::asio::steady_timer& deadline);

    // Over TLS: reads what has arrived (at least one byte, or an error). Without TLS the
    // connection reads plain_socket() directly (not_connected here).
    boost::asio::awaitable<result> async_read_some(boost::asio::mutable_buffer buffer);
    // Over TLS: writes all of `buffer`, or fails. Without TLS, as async_read_some.
    boost::asio::awaitable<result> async_write(boost::asio::const_buffer buffer);

    // The TCP socket when TLS is off, else nullptr: the connection's loops await it directly,
    // without a coroutine of the transport's own around every read and write.
    boost::asio::ip::tcp::socket* plain_socket() noexcept { return tls_ ? nullptr : &socket_; }

    // Closes the connection; operations in flight complete with operation_aborted.
    void close();

    // For the log line of a failure streak: why the last connect or TLS read/write failed, when
    // an error code alone does not say it (the certificate problem, a TLS alert), or that the
    // server asked for a client certificate none is configured for; else "".
    const std::string& failure() const noexcept { return failure_; }

private:
    using tls_stream = boost::asio::ssl::stream<boost::asio::ip::tcp::socket>;

    boost::asio::awaitable<boost::system::error_code> handshake(const std::string& host,
                                                                boost::asio::steady_timer& deadline);
    void note_tls_error(const char* what, boost::system::error_code ec);

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_tls_context> tls_;
    boost::asio::ip::tcp::socket socket_; // the connection when TLS is off
    // The connection when TLS is on; new per connection (an SSL object serves one), and held by
    // every operation in flight so closing and reconnecting never frees a stream still in use.
    std::shared_ptr<tls_stream> stream_;
    std::string failure_;
    bool certificate_requested_ = false; // the server asked for a client certificate we lack
};

} // namespace idemgate::store::detail
