// SPDX-License-Identifier: Apache-2.0
// idemgate_tls_certificate_expiry_timestamp_seconds: the notAfter of every certificate the
// gateway presents, read from the contexts the live generation loaded (so a reload that reads
// a renewed file shows its date), and of the Redis client certificate (read at start, as the
// store's connections read it).
#include "admin/admin.hpp"
#include "upstream/upstream_tls.hpp"

#include <boost/asio/ssl/context.hpp>
#include <cstdio>
#include <ctime>
#include <idemgate/common/prometheus.hpp>
#include <memory>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace idemgate::gateway::detail {

namespace {

std::optional<double> not_after(const X509* cert)
{
    std::tm tm{};
    if (!cert || ASN1_TIME_to_tm(X509_get0_notAfter(cert), &tm) != 1)
        return std::nullopt;
    return static_cast<double>(timegm(&tm));
}

std::optional<double> not_after(boost::asio::ssl::context& ctx)
{
    return not_after(SSL_CTX_get0_certificate(ctx.native_handle()));
}

void sample(std::string& out, std::string_view use, std::string_view name, std::optional<double> value)
{
    if (value)
        prometheus::sample(out, "idemgate_tls_certificate_expiry_timestamp_seconds",
                           "use=\"" + std::string(use) + "\",name=\"" + prometheus::label_value(name) + "\"",
                           *value);
}

} // namespace

std::optional<double> certificate_file_expiry(const std::string& path)
{
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "r"), &std::fclose);
    if (!file)
        return std::nullopt;
    std::unique_ptr<X509, void (*)(X509*)> cert(PEM_read_X509(file.get(), nullptr, nullptr, nullptr),
                                                &X509_free);
    return not_after(cert.get());
}

void render_certificate_expiry(const live_config* live, std::optional<double> redis, std::string& out)
{
    prometheus::header(out, "idemgate_tls_certificate_expiry_timestamp_seconds", "gauge",
                       "When each certificate the gateway presents expires (its notAfter, Unix time): "
                       "use listener (tls), upstream (upstreams.<name>.tls) or redis (store.redis.tls).");
    if (live && live->listen_tls)
        sample(out, "listener", "listen", not_after(*live->listen_tls));
    if (live)
        for (std::size_t i = 0; i < live->upstream_contexts.size() && i < live->cfg.upstreams.size(); ++i)
            if (const auto& tls = live->upstream_contexts[i];
                tls && !live->cfg.upstreams[i].tls.cert_file.empty())
                sample(out, "upstream", live->cfg.upstreams[i].name, not_after(tls->ssl));
    sample(out, "redis", "store", redis);
}

} // namespace idemgate::gateway::detail
