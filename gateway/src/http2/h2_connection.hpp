// SPDX-License-Identifier: Apache-2.0
#pragma once
// One client connection speaking HTTP/2 (RFC 9113): negotiated by ALPN ("h2") on the TLS
// listener, or with prior knowledge on a plain listener (http2.cleartext). The connection reads
// into the nghttp2 session and writes what it produces, on the connection's own thread; each
// request stream goes through the idempotency filter (h2_session.hpp).
#include "state/worker.hpp"
#include "transport/tls.hpp"

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <string_view>

namespace idemgate::gateway::detail {

// The client connection preface (RFC 9113 3.4).
inline constexpr std::string_view h2_preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

// What a plain connection's first bytes are.
enum class first_bytes { http1, h2, none };

// Waits (up to `timeout`) for the first bytes of a plain connection and peeks at them, leaving
// them unread: the HTTP/2 preface, something else, or nothing (closed, timed out).
boost::asio::awaitable<first_bytes> peek_first_bytes(tcp::socket& socket, std::chrono::milliseconds timeout);

// Serves HTTP/2 on a plain connection that begins with the preface, until either side ends it.
boost::asio::awaitable<void> serve_h2_plain(gateway_context& ctx, worker& w, tcp::socket socket,
                                            client_info client);

// Serves HTTP/2 on an established TLS stream; leaves it open for close_notify.
boost::asio::awaitable<void> serve_h2_over_tls(gateway_context& ctx, worker& w, tls_stream& stream,
                                               client_info client);

} // namespace idemgate::gateway::detail
