#pragma once
// One I/O thread's keep-alive connections to one upstream, and the request/response exchange.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <memory>
#include <string>
#include <vector>

struct ssl_session_st; // OpenSSL's SSL_SESSION

namespace idemgate::gateway {

namespace detail {
struct upstream_tls;            // tls.hpp: the upstream's client context and verified name
struct upstream_tls_connection; // upstream_pool.cpp: a TLS stream over a tcp_stream
struct tls_connection_deleter {
    void operator()(upstream_tls_connection* c) const noexcept;
};
struct tls_session_deleter {
    void operator()(ssl_session_st* s) const noexcept;
};
} // namespace detail

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

struct upstream_result {
    boost::system::error_code ec; // error::upstream_connect / _timeout / _protocol / _too_large
    bool sent = false;            // the whole request was written (an error after it: outcome unknown)
    http::response<http::string_body> response;
};

// Not thread-safe: owned by one I/O thread and used from its executor only. Plain HTTP, or
// HTTPS when `tls` is set (upstreams.<name>.tls): the same pooling, retries and deadlines; the
// handshake counts as connecting, and the last TLS session is offered again on reconnect.
class upstream_pool {
public:
    upstream_pool(boost::asio::any_io_executor ex, std::vector<tcp::endpoint> endpoints, std::size_t max_idle,
                  const config::config& cfg, metrics& m, std::string name = {},
                  std::shared_ptr<detail::upstream_tls> tls = nullptr);
    ~upstream_pool();
    upstream_pool(const upstream_pool&) = delete;
    upstream_pool& operator=(const upstream_pool&) = delete;

    // Sends `req` (already re-framed) and reads the full response with the configured deadlines.
    // A reused connection whose write fails is retried once on a fresh connection (the race every
    // keep-alive proxy has with the upstream's idle close); one that dies after the request was
    // written is retried only for idempotent methods (RFC 9110 9.2.2).
    boost::asio::awaitable<upstream_result> exchange(const http::request<http::string_body>& req,
                                                     bool head_request, std::string& scratch);

    std::size_t idle_count() const noexcept { return idle_.size() + idle_tls_.size(); }

private:
    using tls_connection_ptr =
        std::unique_ptr<detail::upstream_tls_connection, detail::tls_connection_deleter>;

    template<class Connection>
    boost::asio::awaitable<upstream_result> exchange_over(const http::request<http::string_body>& req,
                                                          bool head_request, std::string& scratch);
    template<class Connection>
    Connection take_idle();
    template<class Connection>
    boost::asio::awaitable<boost::system::error_code> connect(Connection& conn);

    boost::asio::any_io_executor executor_;
    std::vector<tcp::endpoint> endpoints_;
    std::size_t max_idle_;
    const config::config& config_;
    metrics& metrics_;
    std::vector<std::unique_ptr<boost::beast::tcp_stream>> idle_;
    std::string name_; // upstreams.<name>, for the log
    std::shared_ptr<detail::upstream_tls> tls_;
    std::vector<tls_connection_ptr> idle_tls_;
    std::unique_ptr<ssl_session_st, detail::tls_session_deleter> session_; // offered on reconnect
};

} // namespace idemgate::gateway
