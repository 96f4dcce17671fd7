// SPDX-License-Identifier: Apache-2.0
#include "upstream/upstream_tls.hpp"

#include <boost/beast/core/error.hpp>
#include <idemgate/common/client_tls.hpp>
#include <idemgate/common/openssl_error.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <vector>

namespace idemgate::gateway::detail {

namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;

std::shared_ptr<upstream_tls> make_upstream_tls(const config::upstream_config& up)
{
    const auto& cfg = up.tls;
    if (!cfg.enabled)
        return nullptr;
    auto tls = std::make_shared<upstream_tls>();
    std::vector<std::string> problems;
    configure_client_tls(tls->ssl, {cfg.ca_file, cfg.cert_file, cfg.key_file, cfg.verify},
                         "upstreams." + up.name + ".tls.", problems);
    tls->verify = cfg.verify;
    tls->name = cfg.server_name; // "" = the host of each address (upstream fleets)
    SSL_CTX* native = tls->ssl.native_handle();
    // Client sessions are kept by the pool (SSL_get1_session), not by an internal cache.
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    static const unsigned char http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_CTX_set_alpn_protos(native, http11, sizeof http11);
    if (!problems.empty())
        throw config::config_error(std::move(problems));
    return tls;
}

std::string prepare_client_ssl(SSL* native, const upstream_tls& tls, const std::string& name,
                               SSL_SESSION* resume)
{
    std::string why;
    if (!set_peer_name(native, name, tls.verify, why))
        return why.empty() ? std::string("the upstream's name was refused") : why;
    if (resume)
        SSL_set_session(native, resume);
    return {};
}

std::string describe_client_failure(SSL* native, const upstream_tls& tls, const std::string& name,
                                    const error_code& ec)
{
    if (ec == beast::error::timeout)
        return "TLS handshake timed out (is the upstream at this address speaking TLS?)";
    long verify_result = SSL_get_verify_result(native);
    if (tls.verify && verify_result != X509_V_OK)
        return "TLS handshake failed: certificate verify failed: " +
               std::string(X509_verify_cert_error_string(verify_result)) + " (verifying \"" + name + "\")";
    return "TLS handshake failed: " + ec.message();
}

} // namespace idemgate::gateway::detail
