#pragma once
// One keep-alive HTTP/1.1 client connection for the load tester: connects on demand, writes
// pre-rendered request bytes, reads one answer with Beast's parser (1xx interim answers
// skipped), with a deadline on every connect, write and read. Errors come back as error_code.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <optional>
#include <string_view>

namespace idemgate::loadtest {

namespace asio = boost::asio;
namespace beast = boost::beast;

// Where a failed exchange failed.
enum class exchange_stage { none, connect, write, read };

struct exchange_error {
    boost::system::error_code ec;
    exchange_stage stage = exchange_stage::none;
    bool timed_out() const noexcept { return ec == beast::error::timeout; }
    explicit operator bool() const noexcept { return static_cast<bool>(ec); }
};

class http_client_connection {
public:
    http_client_connection(asio::any_io_executor executor, asio::ip::tcp::resolver::results_type endpoints,
                           std::chrono::nanoseconds timeout);

    // Sends `request` (connecting first when needed) and reads the answer into `res`. After an
    // error, or an answer that closes the connection, the next call connects again.
    asio::awaitable<exchange_error> exchange(std::string_view request,
                                             beast::http::response<beast::http::string_body>& res,
                                             bool head_request = false);
    // Connects now if not connected (a probe before a run).
    asio::awaitable<exchange_error> connect();
    void close() noexcept;

    // Largest answer body accepted.
    static constexpr std::uint64_t body_limit = 64 * 1024 * 1024;

private:
    asio::any_io_executor executor_;
    asio::ip::tcp::resolver::results_type endpoints_;
    std::chrono::nanoseconds timeout_;
    std::optional<beast::tcp_stream> stream_;
    beast::flat_buffer buffer_;
};

} // namespace idemgate::loadtest
