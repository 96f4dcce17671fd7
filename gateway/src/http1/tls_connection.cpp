// SPDX-License-Identifier: Apache-2.0
// HTTP/1.1 over an established TLS stream: the one instantiation of http_connection over
// tls_stream (see http_connection_impl.hpp for why it is not in http_connection.cpp), and the
// plain-HTTP answer on the TLS port. The handshake and the choice of protocol are the runtime's
// (runtime/client_connection.cpp).
#include "core/problem.hpp"
#include "http1/http_connection_impl.hpp"
#include "transport/lingering_close.hpp"
#include "transport/tls.hpp"
#include "transport/wire.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <idemgate/common/log.hpp>
#include <openssl/ssl.h>
#include <sys/socket.h>

namespace idemgate::gateway::detail {

namespace ssl = boost::asio::ssl;

// Answers a plain HTTP request on the TLS port in plain HTTP (as nginx does, so a curl with
// http:// says what is wrong), then closes once the client has read it or the deadline passed.
asio::awaitable<void> refuse_plain_http(const config::config& cfg, beast::tcp_stream& tcp_layer)
{
    const auto& timeouts = cfg.timeouts;
    auto res =
        make_problem(cfg.problems.type_base(),
                     {problems::plain_http_to_tls, "this port serves HTTPS only: use https://"}, 11, false);
    res.set(http::field::date, http_date_now());
    std::string scratch;
    auto ec = co_await write_message(tcp_layer, res, scratch, timeouts.client_write);
    if (!ec) {
        // Unread request bytes would turn the close into a reset that can destroy the answer.
        co_await lingering_close(
            tcp_layer, {std::min(timeouts.client_write, std::chrono::milliseconds(2000)), 64 * 1024});
    } else {
        error_code ignored;
        tcp_layer.socket().close(ignored);
    }
}

asio::awaitable<void> serve_http1_over_tls(gateway_context& ctx, worker& w, tls_stream& stream,
                                           client_info client)
{
    http_connection<tls_stream> connection(ctx, w, stream, std::move(client));
    connection.keep_open_at_end();
    co_await connection.run();
}

} // namespace idemgate::gateway::detail
