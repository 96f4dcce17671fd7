// SPDX-License-Identifier: Apache-2.0
#pragma once
// What both TLS client hops (HTTPS upstreams, Redis over TLS) build alike, and the certificate
// loading the listener shares: TLS 1.2 at least, verification on or off, the CA from a file or
// the system store, a client certificate with its key, and the peer's name (SNI for host names,
// never for an IP literal; host-name or IP verification). Problems are reported under the
// caller's key prefix ("upstreams.orders.tls.", "store.redis.tls.").
#include <boost/asio/ssl/context.hpp>
#include <string>
#include <vector>

namespace idemgate {

// The files and policy of one client context (config::client_tls_config's fields).
struct client_tls_files {
    std::string ca_file;   // "" = the system's CA store
    std::string cert_file; // "" = no client certificate
    std::string key_file;
    bool verify = true;
};

// "\"file\"", for messages that name a file.
std::string quoted(const std::string& file);

// Whether `host` is an IPv4 or IPv6 literal.
bool is_ip_literal(const std::string& host);

// Loads a certificate chain and its private key into `ctx`; each problem names
// `prefix`cert_file or `prefix`key_file.
void load_certificate(boost::asio::ssl::context& ctx, const std::string& prefix, const std::string& cert_file,
                      const std::string& key_file, std::vector<std::string>& problems);

// TLS 1.2 at least, no compression, the verify mode, the CA and the client certificate (when
// `files.cert_file` is set), with one problem per key that fails.
void configure_client_tls(boost::asio::ssl::context& ctx, const client_tls_files& files,
                          const std::string& prefix, std::vector<std::string>& problems);

// The name a client connection verifies its peer against: SNI (host names only, RFC 6066 3) and,
// with `verify`, the host name or IP address the certificate must carry (OpenSSL checks it during
// chain verification: "hostname mismatch", "IP address mismatch"). False, with `why`, when
// OpenSSL refuses the name.
bool set_peer_name(SSL* ssl, const std::string& name, bool verify, std::string& why);

} // namespace idemgate
