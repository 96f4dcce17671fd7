// SPDX-License-Identifier: Apache-2.0
#include "transport/tls.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/client_tls.hpp>
#include <idemgate/common/openssl_error.hpp>
#include <idemgate/gateway/tls.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <vector>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;

namespace {

// ALPN (RFC 7301): the first of the client's protocols that the gateway serves, in the order
// the gateway lists them (`arg`: the wire-format list). A client that offers protocols but none
// of ours gets the no_application_protocol alert the RFC asks for; one that offers none is served
// HTTP/1.1, as before ALPN existed.
int select_protocol(SSL*, const unsigned char** out, unsigned char* out_len, const unsigned char* in,
                    unsigned in_len, void* arg)
{
    const auto& ours = *static_cast<const std::string*>(arg);
    unsigned char* selected = nullptr;
    if (SSL_select_next_proto(&selected, out_len, reinterpret_cast<const unsigned char*>(ours.data()),
                              static_cast<unsigned>(ours.size()), in, in_len) != OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_ALERT_FATAL;
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
}

} // namespace

static_assert(metric::tls_failure_labels.size() == enum_count<tls_failure>, "a label per tls_failure");

const char* to_string(tls_failure f) noexcept
{
    return boost::describe::enum_to_string(f, "other");
}

tls_failure classify_handshake_failure(const error_code& ec) noexcept
{
    if (ec == beast::error::timeout)
        return tls_failure::timeout;
    if (ec == asio::error::eof || ec == asio::error::connection_reset || ec == ssl::error::stream_truncated)
        return tls_failure::closed;
    if (ec.category() != asio::error::get_ssl_category())
        return tls_failure::other;
    int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
    switch (reason) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_NO_PROTOCOLS_AVAILABLE: return tls_failure::protocol_version;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE: return tls_failure::no_client_cert;
    case SSL_R_CERTIFICATE_VERIFY_FAILED: return tls_failure::bad_client_cert;
    case SSL_R_NO_APPLICATION_PROTOCOL: return tls_failure::alpn;
    default: break;
    }
    // Reasons from SSL_AD_REASON_OFFSET on are alerts the peer sent (ssl.h).
    if (reason >= SSL_AD_REASON_OFFSET)
        return tls_failure::peer_alert;
    return tls_failure::other;
}

std::shared_ptr<ssl::context> make_server_tls_context(const config::listen_tls_config& cfg,
                                                      const std::string& alpn_protocols)
{
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    SSL_CTX* native = ctx->native_handle();
    std::vector<std::string> problems;
    // TLS 1.0 and 1.1 are deprecated (RFC 8996).
    SSL_CTX_set_min_proto_version(native, cfg.min_version);
    ctx->set_options(ssl::context::default_workarounds | ssl::context::no_compression |
                     ssl::context::single_dh_use);
    load_certificate(*ctx, "tls.", cfg.cert_file, cfg.key_file, problems);
    if (cfg.client_auth != config::client_auth_mode::none) {
        error_code ec;
        ctx->load_verify_file(cfg.client_ca_file, ec);
        if (ec) {
            problems.push_back("tls.client_ca_file: no CA certificate could be loaded from " +
                               quoted(cfg.client_ca_file) + ": " + openssl_reason(ec));
        } else if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(cfg.client_ca_file.c_str())) {
            // The CertificateRequest names the acceptable CAs, so a client with several
            // certificates picks the right one.
            SSL_CTX_set_client_CA_list(native, names);
        }
        ctx->set_verify_mode(cfg.client_auth == config::client_auth_mode::required
                                 ? ssl::verify_peer | ssl::verify_fail_if_no_peer_cert
                                 : ssl::verify_peer);
    }
    // Session resumption: the server-side cache (ids) and stateless tickets (OpenSSL's default,
    // keys made per process). A session id context is required once client certificates are
    // verified, or resumed handshakes fail.
    static constexpr unsigned char session_context[] = "idemgate";
    SSL_CTX_set_session_id_context(native, session_context, sizeof session_context - 1);
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
    SSL_CTX_sess_set_cache_size(native, 20000);
    SSL_CTX_set_alpn_select_cb(native, &select_protocol, const_cast<std::string*>(&alpn_protocols));
    if (!problems.empty())
        throw config::config_error(std::move(problems));
    return ctx;
}

std::string negotiated_protocol(SSL* native)
{
    const unsigned char* name = nullptr;
    unsigned len = 0;
    SSL_get0_alpn_selected(native, &name, &len);
    return name ? std::string(reinterpret_cast<const char*>(name), len) : std::string();
}

std::string verified_client_common_name(SSL* native)
{
    X509* cert = SSL_get0_peer_certificate(native);
    if (!cert || SSL_get_verify_result(native) != X509_V_OK)
        return {};
    X509_NAME* subject = X509_get_subject_name(cert);
    // The most specific CN when there are several (the last one, as RFC 6125 6.4.4 reads them).
    int index = -1;
    for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
         i = X509_NAME_get_index_by_NID(subject, NID_commonName, i))
        index = i;
    if (index < 0)
        return {};
    unsigned char* utf8 = nullptr;
    int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, index)));
    if (n < 0)
        return {};
    std::string name(reinterpret_cast<const char*>(utf8), static_cast<std::size_t>(n));
    OPENSSL_free(utf8);
    return name;
}

asio::awaitable<void> close_tls(tls_stream& stream, std::chrono::milliseconds timeout)
{
    // RFC 8446 6.1: each side sends close_notify; a side may close without waiting for the
    // peer's. Marking it received makes SSL_shutdown send ours and finish. A sent close_notify
    // also keeps the session resumable (OpenSSL drops sessions of connections that end without).
    SSL* native = stream.native_handle();
    SSL_set_shutdown(native, SSL_get_shutdown(native) | SSL_RECEIVED_SHUTDOWN);
    auto& tcp_layer = beast::get_lowest_layer(stream);
    tcp_layer.expires_after(timeout);
    co_await stream.async_shutdown(asio::as_tuple(asio::use_awaitable)); // failing is closing too
    tcp_layer.expires_never();
    error_code ignored;
    tcp_layer.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    tcp_layer.socket().close(ignored);
}

} // namespace idemgate::gateway::detail
