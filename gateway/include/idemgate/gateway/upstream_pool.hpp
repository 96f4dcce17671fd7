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

namespace idemgate::gateway {

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

struct upstream_result {
    boost::system::error_code ec; // error::upstream_connect / _timeout / _protocol / _too_large
    bool sent = false;            // the whole request was written (an error after it: outcome unknown)
    http::response<http::string_body> response;
};

// Not thread-safe: owned by one I/O thread and used from its executor only.
class upstream_pool {
public:
    upstream_pool(boost::asio::any_io_executor ex, std::vector<tcp::endpoint> endpoints, std::size_t max_idle,
                  const config::config& cfg, metrics& m);

    // Sends `req` (already re-framed) and reads the full response with the configured deadlines.
    // A reused connection whose write fails is retried once on a fresh connection (the race every
    // keep-alive proxy has with the upstream's idle close); one that dies after the request was
    // written is retried only for idempotent methods (RFC 9110 9.2.2).
    boost::asio::awaitable<upstream_result> exchange(const http::request<http::string_body>& req,
                                                     bool head_request, std::string& scratch);

    std::size_t idle_count() const noexcept { return idle_.size(); }

private:
    std::unique_ptr<boost::beast::tcp_stream> take_idle();

    boost::asio::any_io_executor executor_;
    std::vector<tcp::endpoint> endpoints_;
    std::size_t max_idle_;
    const config::config& config_;
    metrics& metrics_;
    std::vector<std::unique_ptr<boost::beast::tcp_stream>> idle_;
};

} // namespace idemgate::gateway
