// SPDX-License-Identifier: Apache-2.0
#pragma once
// One client connection's HTTP/1.1 loop: read each request under limits and deadlines, check
// its framing, answer 100-continue, hand it to the idempotency filter, write the answer, keep
// the connection alive or close it, and log it. Generic over the stream so that TLS plugs in
// without touching the request path: Stream is beast::tcp_stream or detail::tls_stream.
#include "state/worker.hpp"
#include "transport/tls.hpp"

#include <boost/asio/awaitable.hpp>

namespace idemgate::gateway::detail {

// Counts a client connection in connections_active (limits.max_connections) for its whole
// life, a TLS handshake included.
struct connection_guard {
    metrics& m;
    explicit connection_guard(metrics& mm) : m(mm) { m.connections_active.fetch_add(1); }
    ~connection_guard() { m.connections_active.fetch_sub(1); }
    connection_guard(const connection_guard&) = delete;
    connection_guard& operator=(const connection_guard&) = delete;
};

// Serves a plain HTTP connection until the client closes, an error, or the gateway drains.
boost::asio::awaitable<void> serve_plain_connection(gateway_context& ctx, worker& w, tcp::socket socket,
                                                    client_info client);

// Serves HTTP/1.1 on an established TLS stream until the client closes, an error, or the
// gateway drains; leaves the stream open for close_notify.
boost::asio::awaitable<void> serve_http1_over_tls(gateway_context& ctx, worker& w, tls_stream& stream,
                                                  client_info client);

// Answers a plain HTTP request that arrived on the TLS port in plain HTTP (as nginx does, so a
// curl with http:// says what is wrong), then closes.
boost::asio::awaitable<void> refuse_plain_http(const config::config& cfg,
                                               boost::beast::tcp_stream& tcp_layer);

} // namespace idemgate::gateway::detail
