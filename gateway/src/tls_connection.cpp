// HTTPS client connections (issue 11): the first byte, the handshake and its failure
// accounting, then the one instantiation of http_connection over tls_stream (see
// http_connection_impl.hpp for why it is not in http_connection.cpp), then close_notify.
#include "http_connection_impl.hpp"
#include "tls.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/problem.hpp>
#include <idemgate/gateway/wire.hpp>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace idemgate::gateway::detail {

namespace ssl = boost::asio::ssl;

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
    auto res =
        make_problem(problems::plain_http_to_tls, "this port serves HTTPS only: use https://", 11, false);
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

asio::awaitable<bool> accept_tls(gateway_context& ctx, tls_stream& stream, client_info& client)
{
    auto& tcp_layer = beast::get_lowest_layer(stream);
    // One deadline from accept to the end of the handshake (a client that never finishes it
    // holds a connection slot no longer than a slow request header would).
    tcp_layer.expires_after(ctx.cfg.timeouts.header_read);

    // The first byte tells a ClientHello from a plain HTTP request: wait until the socket is
    // readable, then peek at it (it stays for the handshake to read).
    char first[1] = {0};
    error_code rec;
    {
        using namespace asio::experimental::awaitable_operators;
        asio::steady_timer timer(tcp_layer.get_executor());
        timer.expires_after(ctx.cfg.timeouts.header_read);
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
            count_failure(ctx, client, classify_handshake_failure(rec), rec.message());
        tcp_layer.socket().close(ignored);
        co_return false;
    }
    if (static_cast<unsigned char>(first[0]) != handshake_record) {
        if (looks_like_http(first[0])) {
            count_failure(ctx, client, tls_failure::plain_http, "a plain HTTP request on the TLS port");
            co_await refuse_plain_http(ctx, tcp_layer);
        } else {
            count_failure(ctx, client, tls_failure::not_tls, "the first bytes are not a TLS handshake");
            tcp_layer.socket().close(ignored);
        }
        co_return false;
    }

    auto [hec] = co_await stream.async_handshake(ssl::stream_base::server, use_tuple);
    if (hec) {
        count_failure(ctx, client, classify_handshake_failure(hec), hec.message());
        tcp_layer.socket().close(ignored);
        co_return false;
    }
    tcp_layer.expires_never();
    SSL* native = stream.native_handle();
    bool resumed = SSL_session_reused(native) == 1;
    ctx.stats.tls_handshakes[resumed ? 1 : 0].fetch_add(1, std::memory_order_relaxed);
    client.tls = true;
    client.client_cert_subject = verified_client_subject(native);
    client.client_cert_cn = verified_client_common_name(native);
    co_return true;
}

asio::awaitable<void> serve_tls_connection(gateway_context& ctx, worker& w, tcp::socket socket,
                                           client_info client)
{
    connection_guard conn(ctx.stats);
    // The live generation's context, held for the connection's life: a reload that renews the
    // certificate serves new connections with it and leaves this one alone.
    std::shared_ptr<ssl::context> tls_context = w.current(ctx)->live->listen_tls;
    tls_stream stream(std::move(socket), *tls_context);
    if (!co_await accept_tls(ctx, stream, client))
        co_return;
    {
        http_connection<tls_stream> connection(ctx, w, stream, std::move(client));
        connection.keep_open_at_end();
        co_await connection.run();
    }
    co_await close_tls(stream, ctx.cfg.timeouts.client_write);
}

} // namespace idemgate::gateway::detail
