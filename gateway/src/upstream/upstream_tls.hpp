// SPDX-License-Identifier: Apache-2.0
#pragma once
// TLS on the upstream hop: one client context per HTTPS upstream (CA, SNI and name
// verification, client certificate), and what a pooled connection asks of it.
#include <boost/asio/ssl/context.hpp>
#include <boost/system/error_code.hpp>
#include <idemgate/config/config.hpp>
#include <memory>
#include <string>

namespace idemgate::gateway::detail {

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
// and the session to resume. Empty, or why OpenSSL refuses the name.
std::string prepare_client_ssl(SSL* ssl, const upstream_tls& tls, const std::string& name,
                               SSL_SESSION* resume);

// A description of a failed client-side handshake for the log ("certificate verify failed:
// hostname mismatch (verifying \"localhost\")").
std::string describe_client_failure(SSL* ssl, const upstream_tls& tls, const std::string& name,
                                    const boost::system::error_code& ec);

} // namespace idemgate::gateway::detail
