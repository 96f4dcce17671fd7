// SPDX-License-Identifier: Apache-2.0
#pragma once
// One keep-alive HTTP/1.1 client connection for the load tester: connects on demand (TLS with
// SNI and certificate checks for https://), writes pre-rendered request bytes, reads one answer
// with Beast's parser (1xx interim answers skipped), with a deadline on every connect, handshake,
// write and read. Errors come back as error_code.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::loadtest {

namespace asio = boost::asio;
namespace beast = boost::beast;

// Where a failed exchange failed (a TLS handshake counts as connecting).
enum class exchange_stage { none, connect, write, read };

struct exchange_error {
    boost::system::error_code ec;
    exchange_stage stage = exchange_stage::none;
    bool timed_out() const noexcept { return ec == beast::error::timeout; }
    explicit operator bool() const noexcept { return static_cast<bool>(ec); }
};

// Bytes one exchange moved: the request as written, and every answer read (interim ones too).
struct exchange_bytes {
    std::uint64_t sent = 0;
    std::uint64_t received = 0;
};

// The TLS client context of a run: TLS 1.2 or later; the server's certificate checked against
// `cacert` (a PEM file) or the system's CAs, unless `insecure`. nullopt with `error`.
std::optional<asio::ssl::context> client_tls_context(bool insecure, const std::string& cacert,
                                                     std::string& error);

class http_client_connection {
public:
    // `tls`: null for http://; for https://, the context shared by every connection, and
    // `server_name` the URL's host (SNI, and the name the certificate must carry).
    http_client_connection(asio::any_io_executor executor, asio::ip::tcp::resolver::results_type endpoints,
                           std::chrono::nanoseconds timeout, asio::ssl::context* tls = nullptr,
                           std::string server_name = {});

    // Sends `request` (connecting first when needed) and reads the answer into `res`. After an
    // error, or an answer that closes the connection, the next call connects again.
    asio::awaitable<exchange_error> exchange(std::string_view request,
                                             beast::http::response<beast::http::string_body>& res,
                                             bool head_request = false, exchange_bytes* bytes = nullptr);
    // Connects now if not connected (a probe before a run).
    asio::awaitable<exchange_error> connect();
    void close() noexcept;

    // Largest answer body accepted.
    static constexpr std::uint64_t body_limit = 64 * 1024 * 1024;

private:
    template<class Stream>
    asio::awaitable<exchange_error> exchange_on(Stream& stream, std::string_view request,
                                                beast::http::response<beast::http::string_body>& res,
                                                bool head_request, exchange_bytes* bytes);
    beast::tcp_stream& tcp() noexcept { return tls_stream_ ? tls_stream_->next_layer() : *stream_; }
    bool connected() const noexcept { return stream_.has_value() || tls_stream_.has_value(); }

    asio::any_io_executor executor_;
    asio::ip::tcp::resolver::results_type endpoints_;
    std::chrono::nanoseconds timeout_;
    asio::ssl::context* tls_;
    std::string server_name_;
    std::optional<beast::tcp_stream> stream_;                        // http://
    std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream_; // https://
    beast::flat_buffer buffer_;
};

} // namespace idemgate::loadtest
