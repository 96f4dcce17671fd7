// SPDX-License-Identifier: Apache-2.0
#pragma once
// TLS on the client hop: the listener's server context (certificate, TLS 1.2/1.3, client
// certificates, ALPN, session cache and tickets), the handshake of an accepted connection and
// close_notify. Certificate loading is common/client_tls.hpp's, shared with both client hops.
// Contexts are built once per configuration generation and shared by every I/O thread
// (OpenSSL locks what it shares).
#include "core/exchange.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/describe/enum.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <memory>
#include <string>
#include <vector>

namespace idemgate::gateway::detail {

// A TLS stream over Beast's tcp_stream: deadlines stay on the lowest layer, and Beast's
// flat_stream coalesces a gather write (head + body) into one TLS record.
using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// Why a client's handshake failed: the label of idemgate_tls_handshake_failures_total.
BOOST_DEFINE_ENUM_CLASS(
    tls_failure,
    plain_http,       // an HTTP request line instead of a ClientHello (answered 400, closed)
    not_tls,          // other bytes that are not a TLS record
    timeout,          // no complete handshake within timeouts.header_read
    protocol_version, // below tls.min_version, or no common version or cipher
    no_client_cert,   // client_auth: required and the client sent none
    bad_client_cert,  // the client's certificate did not verify against tls.client_ca_file
    alpn,             // the client offered application protocols, none of them served here
    peer_alert,       // the client refused the handshake (e.g. it does not trust our certificate)
    closed,           // the client closed the connection during the handshake
    other);
const char* to_string(tls_failure f) noexcept;

// Classifies a failed server-side handshake.
tls_failure classify_handshake_failure(const boost::system::error_code& ec) noexcept;

// The server context for `listen`; throws config::config_error naming the tls.* key on failure.
// `alpn_protocols`: the application protocols the gateway serves, in ALPN wire format (length-
// prefixed names, preferred first); it must outlive the context.
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const config::listen_tls_config& cfg,
                                                                   const std::string& alpn_protocols);

// The protocol ALPN selected on an established connection; "" when the client offered none.
std::string negotiated_protocol(SSL* ssl);

// The common name (UTF-8) of the verified client certificate; "" without a verified one or a CN.
std::string verified_client_common_name(SSL* ssl);

// How the start of an HTTPS client connection ended.
enum class tls_accept {
    ok,         // handshake done: `client` says TLS and carries the certificate's name
    failed,     // counted, logged and closed
    plain_http, // a plain HTTP request on the TLS port: counted; the caller answers it
};

// The start of an HTTPS client connection: tells plain HTTP and other bytes apart from a
// ClientHello, runs the handshake, all under `handshake_timeout`; counts a success or failure
// in `stats` and logs a failure once.
boost::asio::awaitable<tls_accept> accept_tls(metrics& stats, tls_stream& stream, client_info& client,
                                              std::chrono::milliseconds handshake_timeout);

// Sends close_notify without waiting for the peer's (most clients never answer it), bounded by
// `timeout`, then closes the socket.
boost::asio::awaitable<void> close_tls(tls_stream& stream, std::chrono::milliseconds timeout);

} // namespace idemgate::gateway::detail
