// SPDX-License-Identifier: Apache-2.0
#pragma once
// One HTTP/2 client connection for the load tester, shared by the --streams lanes of a
// connection, each with one request in flight on a stream of its own: h2 by ALPN over TLS for
// https://, h2c with prior knowledge for http://, with nghttp2. Connects on demand, and again
// after the connection failed or the server sent GOAWAY. Every connect, handshake and write has a
// deadline, and every request waits for its answer at most the timeout; a request that fails says
// why in a line naming what happened (GOAWAY and its code, RST_STREAM and its code, a protocol
// error, the server falling silent). Used from its executor's thread only.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <idemgate/loadtest/answer_check.hpp>
#include <idemgate/loadtest/http_client.hpp>
#include <idemgate/loadtest/request_template.hpp>
#include <memory>
#include <string>
#include <vector>

namespace idemgate::loadtest {

namespace detail {
class h2_link;
}

// Why an HTTP/2 request failed, beside the socket's own errors.
enum class h2_error {
    goaway = 1,   // the server sent GOAWAY before answering the stream
    stream_reset, // the stream was reset (RST_STREAM)
    protocol,     // the server broke the protocol; the connection ended
    no_alpn_h2,   // TLS: the server did not choose h2 by ALPN
    closed        // the connection ended before the answer
};
const boost::system::error_category& h2_category() noexcept;
boost::system::error_code make_error_code(h2_error e) noexcept;

class h2_client_connection {
public:
    // `tls`: null for h2c (http://); for https://, the run's context, `server_name` the URL's
    // host (SNI and the certificate's name).
    h2_client_connection(asio::any_io_executor executor, asio::ip::tcp::resolver::results_type endpoints,
                         std::chrono::nanoseconds timeout, asio::ssl::context* tls = nullptr,
                         std::string server_name = {});
    ~h2_client_connection();
    h2_client_connection(const h2_client_connection&) = delete;
    h2_client_connection& operator=(const h2_client_connection&) = delete;

    // Connects now unless a connection takes new streams. `detail`: why it failed.
    asio::awaitable<exchange_error> connect(std::string* detail = nullptr);
    // Sends `req` on a new stream (connecting first when needed) and waits for its answer in
    // `res`, at most the timeout, on `waiter` (the caller's timer). `req` must live until then.
    asio::awaitable<exchange_error> exchange(const request_fields& req, response& res,
                                             asio::steady_timer& waiter, exchange_bytes* bytes = nullptr,
                                             std::string* detail = nullptr);
    void close() noexcept;

private:
    void retire_link();

    asio::any_io_executor executor_;
    asio::ip::tcp::resolver::results_type endpoints_;
    std::chrono::nanoseconds timeout_;
    asio::ssl::context* tls_;
    std::string server_name_;
    std::shared_ptr<detail::h2_link> link_;
    std::vector<std::weak_ptr<detail::h2_link>> retired_; // after GOAWAY: closed with their last stream
    // While one lane connects, the others wait on this timer (cancel() wakes them all).
    bool connecting_ = false;
    asio::steady_timer connected_;
    std::uint64_t connects_ = 0;
    exchange_error connect_result_;
    std::string connect_detail_;
};

} // namespace idemgate::loadtest

template<>
struct boost::system::is_error_code_enum<idemgate::loadtest::h2_error> : std::true_type {
};
