// The TLS part of a client connection (issue 11): the first bytes, the handshake, its failure
// accounting; then the same HTTP/1.1 loop as a plain connection (http_connection.cpp).
#include "http_connection.hpp"
#include "tls.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/problem.hpp>
#include <idemgate/gateway/wire.hpp>
#include <openssl/ssl.h>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

// TLS record content type 22 (RFC 8446 5.1): every ClientHello starts with it.
constexpr unsigned char handshake_record = 0x16;

// An HTTP request line starts with a method token; the standard ones are upper-case letters.
bool looks_like_http(char c)
{
    return c >= 'A' && c <= 'Z';
}

void count_failure(gateway_context& ctx, const client_info& client, tls_failure why, std::string_view error)
{
    ctx.stats.tls_handshake_failures[static_cast<std::size_t>(why)].fetch_add(1, std::memory_order_relaxed);
    log::warn("TLS handshake failed", {{"client", client.ip}, {"reason", to_string(why)}, {"error", error}});
}

// Answers a plain HTTP request on the TLS port in plain HTTP (as nginx does, so a curl with
// http:// says what is wrong), then closes once the client has read it or the deadline passed.
asio::awaitable<void> refuse_plain_http(gateway_context& ctx, beast::tcp_stream& tcp_layer)
{
    auto res = make_problem(problems::plain_http_to_tls, "this port serves HTTPS only: use https://", 11, false);
    std::string scratch;
    auto ec = co_await write_message(tcp_layer, res, scratch, ctx.cfg.timeouts.client_write);
    error_code ignored;
    if (!ec) {
        // Closing with unread request bytes would send a reset that can destroy the answer in
        // flight: half-close and read what is left (bounded) until the client closes.
        tcp_layer.socket().shutdown(tcp::socket::shutdown_send, ignored);
        tcp_layer.expires_after(std::min(ctx.cfg.timeouts.client_write, std::chrono::milliseconds(2000)));
        std::array<char, 1024> sink;
        for (int i = 0; i < 64; ++i) {
            auto [rec, n] = co_await tcp_layer.async_read_some(asio::buffer(sink), use_tuple);
            if (rec)
                break;
        }
    }
    tcp_layer.socket().close(ignored);
}

} // namespace

asio::awaitable<void> serve_tls_connection(gateway_context& ctx, worker& w, tcp::socket socket,
                                           client_info client)
{
    connection_guard conn(ctx.stats);
    tls_stream stream(std::move(socket), *ctx.listen_tls);
    auto& tcp_layer = beast::get_lowest_layer(stream);
    // One deadline from accept to the end of the handshake (a client that never finishes it
    // holds a connection slot no longer than a slow request header would).
    tcp_layer.expires_after(ctx.cfg.timeouts.header_read);

    // The first bytes tell a ClientHello from a plain HTTP request; they are handed to the
    // handshake afterwards, not read twice.
    std::array<char, 512> first;
    auto [rec, n] = co_await tcp_layer.async_read_some(asio::buffer(first), use_tuple);
    error_code ignored;
    if (rec) {
        // Connected and closed without a byte: a TCP health check, not a failed handshake.
        if (rec != asio::error::eof && rec != asio::error::connection_reset)
            count_failure(ctx, client, classify_handshake_failure(rec), rec.message());
        tcp_layer.socket().close(ignored);
        co_return;
    }
    if (static_cast<unsigned char>(first[0]) != handshake_record) {
        if (looks_like_http(first[0])) {
            count_failure(ctx, client, tls_failure::plain_http, "a plain HTTP request on the TLS port");
            co_await refuse_plain_http(ctx, tcp_layer);
        } else {
            count_failure(ctx, client, tls_failure::not_tls, "the first bytes are not a TLS handshake");
            tcp_layer.socket().close(ignored);
        }
        co_return;
    }

    auto [hec, used] =
        co_await stream.async_handshake(ssl::stream_base::server, asio::buffer(first.data(), n), use_tuple);
    if (hec) {
        count_failure(ctx, client, classify_handshake_failure(hec), hec.message());
        tcp_layer.socket().close(ignored);
        co_return;
    }
    tcp_layer.expires_never();
    SSL* native = stream.native_handle();
    bool resumed = SSL_session_reused(native) == 1;
    ctx.stats.tls_handshakes[resumed ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
    client.tls = true;
    client.client_cert_subject = verified_client_subject(native);
    co_await run_http_connection(ctx, w, stream, std::move(client));
}

} // namespace idemgate::gateway::detail
