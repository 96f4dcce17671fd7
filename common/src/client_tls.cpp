// SPDX-License-Identifier: Apache-2.0
#include <boost/asio/ip/address.hpp>
#include <idemgate/common/client_tls.hpp>
#include <idemgate/common/openssl_error.hpp>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace idemgate {

namespace ssl = boost::asio::ssl;
using boost::system::error_code;

std::string quoted(const std::string& file)
{
    return "\"" + file + "\"";
}

bool is_ip_literal(const std::string& host)
{
    error_code ec;
    boost::asio::ip::make_address(host, ec);
    return !ec;
}

void load_certificate(ssl::context& ctx, const std::string& prefix, const std::string& cert_file,
                      const std::string& key_file, std::vector<std::string>& problems)
{
    error_code ec;
    ctx.use_certificate_chain_file(cert_file, ec);
    bool have_cert = !ec;
    if (ec)
        problems.push_back(prefix + "cert_file: no certificate could be loaded from " + quoted(cert_file) +
                           ": " + openssl_reason(ec));
    // OpenSSL refuses a key of the certificate's type that does not match it while loading
    // ("key values mismatch"); SSL_CTX_check_private_key catches the other cases.
    ctx.use_private_key_file(key_file, ssl::context::pem, ec);
    if (ec)
        problems.push_back(prefix + "key_file: no private key for " + prefix +
                           "cert_file could be loaded from " + quoted(key_file) + ": " + openssl_reason(ec));
    else if (have_cert && SSL_CTX_check_private_key(ctx.native_handle()) != 1)
        problems.push_back(prefix + "key_file: " + quoted(key_file) +
                           " is not the private key of the certificate in " + quoted(cert_file) + ": " +
                           openssl_reason(error_code{}));
}

void configure_client_tls(ssl::context& ctx, const client_tls_files& files, const std::string& prefix,
                          std::vector<std::string>& problems)
{
    // TLS 1.0 and 1.1 are deprecated (RFC 8996).
    SSL_CTX_set_min_proto_version(ctx.native_handle(), TLS1_2_VERSION);
    ctx.set_options(ssl::context::default_workarounds | ssl::context::no_compression);
    ctx.set_verify_mode(files.verify ? ssl::verify_peer : ssl::verify_none);
    error_code ec;
    if (!files.ca_file.empty()) {
        ctx.load_verify_file(files.ca_file, ec);
        if (ec)
            problems.push_back(prefix + "ca_file: no CA certificate could be loaded from " +
                               quoted(files.ca_file) + ": " + openssl_reason(ec));
    } else {
        ctx.set_default_verify_paths(ec);
        if (ec && files.verify)
            problems.push_back(prefix + "ca_file: empty, and the system's CA store could not be loaded: " +
                               openssl_reason(ec));
    }
    if (!files.cert_file.empty())
        load_certificate(ctx, prefix, files.cert_file, files.key_file, problems);
}

bool set_peer_name(SSL* native, const std::string& name, bool verify, std::string& why)
{
    const bool ip_name = is_ip_literal(name);
    if (!ip_name && SSL_set_tlsext_host_name(native, name.c_str()) != 1) {
        why = "cannot use \"" + name + "\" as the server name";
        return false;
    }
    if (verify) {
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
    return true;
}

} // namespace idemgate
