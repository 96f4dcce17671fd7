#pragma once
// One client connection's HTTP/1.1 loop: read each request under limits and deadlines, check
// its framing, answer 100-continue, hand it to the idempotency filter, write the answer, keep
// the connection alive or close it, and log it. Generic over the stream so that a TLS stream
// plugs in without touching the filter: Stream is beast::tcp_stream or an ssl_stream over one.
#include "context.hpp"

#include <boost/asio/awaitable.hpp>

namespace idemgate::gateway::detail {

// Serves the connection until the client closes, an error, or the gateway drains.
template<class Stream>
boost::asio::awaitable<void> serve_http_connection(gateway_context& ctx, worker& w, Stream stream,
                                                   client_info client);

} // namespace idemgate::gateway::detail
