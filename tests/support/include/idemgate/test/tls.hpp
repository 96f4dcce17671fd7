// SPDX-License-Identifier: Apache-2.0
#pragma once
// TLS for the integration tests: certificates made at test time with the openssl CLI
// (EC P-256, which keeps it fast), and a TLS-only redis-server.
#include <cstdint>
#include <idemgate/test/harness.hpp>
#include <memory>
#include <string>
#include <vector>

namespace idemgate::test {

// A test PKI in its own temp_dir: a CA; a server certificate it signed for IP:127.0.0.1 and
// DNS:localhost; a client certificate it signed (clientAuth); and, to show what must fail, an
// unrelated second CA, a private key that belongs to no certificate, a server certificate for
// another name only (DNS:wrong.example), and an expired one (valid in January 2020 only).
// Paths to PEM files.
class test_certificates {
public:
    test_certificates();
    test_certificates(const test_certificates&) = delete;
    test_certificates& operator=(const test_certificates&) = delete;

    std::string ca_cert;
    std::string server_cert;
    std::string server_key;
    std::string client_cert;
    std::string client_key;
    std::string other_ca_cert;   // signed nothing here: verifying against it fails
    std::string stray_key;       // matches none of the certificates
    std::string wrong_name_cert; // signed by the CA for DNS:wrong.example only
    std::string wrong_name_key;
    std::string expired_cert; // signed by the CA for IP:127.0.0.1, expired in 2020
    std::string expired_key;
    std::string client_subject = "CN=idemgate test client"; // of client_cert (RFC 2253)

    // Another client certificate signed by the CA (clientAuth), with subject CN=<common_name>.
    struct leaf {
        std::string cert_file;
        std::string key_file;
    };
    leaf make_client(const std::string& file_name, const std::string& common_name);

private:
    void openssl(const std::vector<std::string>& args);
    // A key and a certificate signed by the CA, with the given extensions (extfile lines).
    void make_leaf(const std::string& name, const std::string& extensions, std::string common_name = {});
    int next_serial_ = 10;

    temp_dir dir_;
};

// redis-server listening only for TLS (--port 0 --tls-port P) on 127.0.0.1 with the server
// certificate of `certs`; `auth_clients` requires a client certificate signed by the CA.
// Ready when the server logged that it accepts connections.
class tls_redis_server {
public:
    // `extra_args` are appended to the redis-server command line.
    explicit tls_redis_server(const test_certificates& certs, bool auth_clients = false,
                              std::vector<std::string> extra_args = {});
    ~tls_redis_server();
    tls_redis_server(const tls_redis_server&) = delete;
    tls_redis_server& operator=(const tls_redis_server&) = delete;

    std::uint16_t port() const { return port_; }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    // One command through `redis-cli --tls` (with the client certificate), its output trimmed.
    std::string cli(const std::vector<std::string>& args);

private:
    void start();

    const test_certificates& certs_;
    bool auth_clients_;
    std::vector<std::string> extra_args_;
    temp_dir dir_;
    std::uint16_t port_ = 0;
    std::unique_ptr<child_process> proc_;
};

// A TLS-only Redis Cluster of 3 primaries without replicas (tls-cluster yes: the bus is TLS
// too), joined by `redis-cli --tls --cluster create`; ready once every node serves all slots.
class tls_redis_cluster {
public:
    explicit tls_redis_cluster(const test_certificates& certs);
    tls_redis_cluster(const tls_redis_cluster&) = delete;
    tls_redis_cluster& operator=(const tls_redis_cluster&) = delete;

    std::size_t size() const { return nodes_.size(); }
    tls_redis_server& node(std::size_t i) { return *nodes_[i]; }
    std::vector<std::string> addresses() const;

private:
    std::vector<std::unique_ptr<tls_redis_server>> nodes_;
};

} // namespace idemgate::test
