#pragma once
// TLS contexts of both HTTP hops (issue 11): the listener's server context (certificate,
// TLS 1.2/1.3, client certificates, ALPN http/1.1, session cache and tickets) and one client
// context per HTTPS upstream (CA, SNI and name verification, client certificate). Contexts are
// built once at start-up and shared by every I/O thread (OpenSSL locks what it shares).
#include "context.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <idemgate/config/config.hpp>
#include <memory>
#include <string>

namespace idemgate::gateway::detail {

// A TLS stream over Beast's tcp_stream: deadlines stay on the lowest layer, and Beast's
// flat_stream coalesces a gather write (head + body) into one TLS record.
using tls_stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// Why a client's handshake failed: the label of idemgate_tls_handshake_failures_total.
enum class tls_failure {
    plain_http,       // an HTTP request line instead of a ClientHello (answered 400, closed)
    not_tls,          // other bytes that are not a TLS record
    timeout,          // no complete handshake within timeouts.header_read
    protocol_version, // below tls.min_version, or no common version or cipher
    no_client_cert,   // client_auth: required and the client sent none
    bad_client_cert,  // the client's certificate did not verify against tls.client_ca_file
    alpn,             // the client offered application protocols, none of them http/1.1
    peer_alert,       // the client refused the handshake (e.g. it does not trust our certificate)
    closed,           // the client closed the connection during the handshake
    other,
};
inline constexpr int tls_failure_count = 10;
const char* to_string(tls_failure f) noexcept;

// Classifies a failed server-side handshake.
tls_failure classify_handshake_failure(const boost::system::error_code& ec) noexcept;

// The server context for `listen`; throws config::config_error naming the tls.* key on failure.
std::shared_ptr<boost::asio::ssl::context> make_server_tls_context(const config::listen_tls_config& cfg);

// The client context of one HTTPS upstream and the name it is verified against.
struct upstream_tls {
    boost::asio::ssl::context ssl{boost::asio::ssl::context::tls_client};
    std::string name; // tls.server_name: SNI and verified name of every address; "" = each
                      // address's own host (an IP literal: verified against IP SANs, no SNI)
    bool verify = true;
};

// nullptr when tls.enabled is false; throws config::config_error naming the key on failure.
std::shared_ptr<upstream_tls> make_upstream_tls(const config::upstream_config& up);

// Prepares a client SSL object for a server called `name` (SNI, host-name or IP verification)
// and the session to resume. False (with `why`) when OpenSSL refuses the name.
bool prepare_client_ssl(SSL* ssl, const upstream_tls& tls, const std::string& name, SSL_SESSION* resume,
                        std::string& why);

// A description of a failed client-side handshake for the log ("certificate verify failed:
// hostname mismatch (verifying \"localhost\")").
std::string describe_client_failure(SSL* ssl, const upstream_tls& tls, const std::string& name,
                                    const boost::system::error_code& ec);

// The verified client certificate's subject (RFC 2253, e.g. "CN=orders-client,O=Shop"), or ""
// when the client sent none.
std::string verified_client_subject(SSL* ssl);
// The common name (UTF-8) of that certificate; "" without a verified one or a CN.
std::string verified_client_common_name(SSL* ssl);

// The start of an HTTPS client connection: tells plain HTTP (answered 400) and other bytes apart
// from a ClientHello, runs the handshake, all under timeouts.header_read; counts and logs a
// failure once. True when the handshake succeeded (`client` then says TLS, and the verified
// client certificate's subject).
boost::asio::awaitable<bool> accept_tls(gateway_context& ctx, tls_stream& stream, client_info& client);

// Sends close_notify without waiting for the peer's (most clients never answer it), bounded by
// `timeout`, then closes the socket.
boost::asio::awaitable<void> close_tls(tls_stream& stream, std::chrono::milliseconds timeout);

} // namespace idemgate::gateway::detail
