#include "upstream/upstream_tls.hpp"

#include "transport/tls.hpp"

#include <boost/beast/core/error.hpp>
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
    std::string prefix = "upstreams." + up.name + ".tls.";
    std::vector<std::string> problems;
    SSL_CTX* native = tls->ssl.native_handle();
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    tls->ssl.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
    tls->ssl.set_verify_mode(cfg.verify ? ssl::verify_peer : ssl::verify_none);
    tls->verify = cfg.verify;
    tls->name = cfg.server_name; // "" = the host of each address (upstream fleets)
    // Client sessions are kept by the pool (SSL_get1_session), not by an internal cache.
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    static const unsigned char http11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_CTX_set_alpn_protos(native, http11, sizeof http11);
    error_code ec;
    if (!cfg.ca_file.empty()) {
        tls->ssl.load_verify_file(cfg.ca_file, ec);
        if (ec)
            problems.push_back(prefix + "ca_file: no CA certificate could be loaded from " +
                               quoted(cfg.ca_file) + ": " + openssl_reason(ec));
    } else {
        tls->ssl.set_default_verify_paths(ec);
        if (ec && cfg.verify)
            problems.push_back(prefix + "ca_file: empty, and the system's CA store could not be loaded: " +
                               openssl_reason(ec));
    }
    if (!cfg.cert_file.empty())
        load_certificate(tls->ssl, prefix, cfg.cert_file, cfg.key_file, problems);
    if (!problems.empty())
        throw config::config_error(std::move(problems));
    return tls;
}

bool prepare_client_ssl(SSL* native, const upstream_tls& tls, const std::string& name, SSL_SESSION* resume,
                        std::string& why)
{
    bool ip_name = is_ip_literal(name);
    // RFC 6066 section 3: SNI carries host names only, never an IP literal.
    if (!ip_name && SSL_set_tlsext_host_name(native, name.c_str()) != 1) {
        why = "cannot use \"" + name + "\" as the server name";
        return false;
    }
    if (tls.verify) {
        // OpenSSL checks the name during chain verification, so a mismatch fails the handshake
        // with its own verify error ("hostname mismatch", "IP address mismatch").
        X509_VERIFY_PARAM* param = SSL_get0_param(native);
        int ok = 0;
        if (ip_name) {
            ok = X509_VERIFY_PARAM_set1_ip_asc(param, name.c_str());
        } else {
            X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
            ok = X509_VERIFY_PARAM_set1_host(param, name.c_str(), name.size());
        }
        if (ok != 1) {
            why = "cannot verify the server against \"" + name + "\"";
            return false;
        }
    }
    if (resume)
        SSL_set_session(native, resume);
    return true;
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
