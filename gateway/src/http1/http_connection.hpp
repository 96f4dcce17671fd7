#pragma once
// One client connection's HTTP/1.1 loop: read each request under limits and deadlines, check
// its framing, answer 100-continue, hand it to the idempotency filter, write the answer, keep
// the connection alive or close it, and log it. Generic over the stream so that TLS plugs in
// without touching the request path: Stream is beast::tcp_stream or detail::tls_stream.
#include "state/worker.hpp"

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

// Serves an HTTPS connection: accept_tls (tls_connection.cpp), then HTTP/1.1 over TLS like a
// plain connection, ending with close_notify.
boost::asio::awaitable<void> serve_tls_connection(gateway_context& ctx, worker& w, tcp::socket socket,
                                                  client_info client);

} // namespace idemgate::gateway::detail
