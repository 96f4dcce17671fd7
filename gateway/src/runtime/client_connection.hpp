// SPDX-License-Identifier: Apache-2.0
#pragma once
// A client connection from accept to close: the protocol it speaks, chosen by ALPN on TLS
// (plain connections speak HTTP/1.1), and the codec that serves it. The codec table is the one
// place a new protocol joins: its ALPN name and the loop that serves a stream.
#include "state/worker.hpp"
#include "transport/tls.hpp"

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway::detail {

// One application protocol: its ALPN name and the loop that serves an established TLS stream.
struct codec {
    std::string_view alpn;
    boost::asio::awaitable<void> (*serve_tls)(gateway_context&, worker&, tls_stream&, client_info);
};

// The codecs, preferred first (ALPN picks the first the client also offers); the last one,
// HTTP/1.1, serves clients that offer none.
const std::vector<codec>& codecs();
// Their ALPN names in wire format, for the server context (lives as long as the process);
// without h2 when http2.enabled is false.
const std::string& alpn_protocols(bool with_h2);

// Serves a plain connection: HTTP/1.1, or HTTP/2 with prior knowledge when http2.cleartext.
boost::asio::awaitable<void> serve_plain_client(gateway_context& ctx, worker& w, tcp::socket socket,
                                                client_info client);
// Serves an HTTPS connection: handshake under the live generation's context and timeouts, the
// codec ALPN chose (HTTP/1.1 when the client offered none), then close_notify.
boost::asio::awaitable<void> serve_tls_client(gateway_context& ctx, worker& w, tcp::socket socket,
                                              client_info client);

} // namespace idemgate::gateway::detail
