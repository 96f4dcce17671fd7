// SPDX-License-Identifier: Apache-2.0
// The start of an HTTPS client connection: the first byte, the handshake and its accounting.
#include "transport/tls.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;
using tcp = asio::ip::tcp;

namespace {

// TLS record content type 22 (RFC 8446 5.1): every ClientHello starts with it.
constexpr unsigned char handshake_record = 0x16;

// An HTTP request line starts with a method token; the standard ones are upper-case letters.
bool looks_like_http(char c)
{
    return c >= 'A' && c <= 'Z';
}

void count_failure(metrics& stats, const client_info& client, tls_failure why, std::string_view error)
{
    stats.tls_handshake_failures[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
    log::warn("TLS handshake failed", {{"client", client.ip}, {"reason", to_string(why)}, {"error", error}});
}

} // namespace

asio::awaitable<tls_accept> accept_tls(metrics& stats, tls_stream& stream, client_info& client,
                                       std::chrono::milliseconds handshake_timeout)
{
    auto& tcp_layer = beast::get_lowest_layer(stream);
    // One deadline from accept to the end of the handshake (a client that never finishes it
    // holds a connection slot no longer than a slow request header would).
    tcp_layer.expires_after(handshake_timeout);

    // The first byte tells a ClientHello from a plain HTTP request: wait until the socket is
    // readable, then peek at it (it stays for the handshake to read).
    char first[1] = {0};
    error_code rec;
    {
        using namespace asio::experimental::awaitable_operators;
        asio::steady_timer timer(tcp_layer.get_executor());
        timer.expires_after(handshake_timeout);
        // Readable can be reported with nothing to read yet (the peek then says EAGAIN, seen
        // about once in 800 handshakes under load): wait again, within the same deadline.
        for (;;) {
            auto waited = co_await (tcp_layer.socket().async_wait(tcp::socket::wait_read, use_tuple) ||
                                    timer.async_wait(use_tuple));
            if (waited.index() == 1) {
                rec = beast::error::timeout;
                break;
            }
            rec = std::get<0>(std::get<0>(waited));
            if (rec)
                break;
            auto n = ::recv(tcp_layer.socket().native_handle(), first, 1, MSG_PEEK | MSG_DONTWAIT);
            if (n > 0)
                break;
            if (n == 0) {
                rec = asio::error::eof;
                break;
            }
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                rec = error_code(errno, boost::system::system_category());
                break;
            }
        }
    }
    error_code ignored;
    if (rec) {
        // Connected and closed without a byte: a TCP health check, not a failed handshake.
        if (rec != asio::error::eof && rec != asio::error::connection_reset)
            count_failure(stats, client, classify_handshake_failure(rec), rec.message());
        tcp_layer.socket().close(ignored);
        co_return tls_accept::failed;
    }
    if (static_cast<unsigned char>(first[0]) != handshake_record) {
        if (looks_like_http(first[0])) {
            count_failure(stats, client, tls_failure::plain_http, "a plain HTTP request on the TLS port");
            co_return tls_accept::plain_http;
        } else {
            count_failure(stats, client, tls_failure::not_tls, "the first bytes are not a TLS handshake");
            tcp_layer.socket().close(ignored);
        }
        co_return tls_accept::failed;
    }

    auto [hec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
    if (hec) {
        count_failure(stats, client, classify_handshake_failure(hec), hec.message());
        tcp_layer.socket().close(ignored);
        co_return tls_accept::failed;
    }
    tcp_layer.expires_never();
    SSL* native = stream.native_handle();
    bool resumed = SSL_session_reused(native) == 1;
    stats.tls_handshakes[resumed ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
    client.tls = true;
    client.client_cert_cn = verified_client_common_name(native);
    co_return tls_accept::ok;
}

} // namespace idemgate::gateway::detail
