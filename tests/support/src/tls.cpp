// SPDX-License-Identifier: Apache-2.0
// Test certificates from the openssl CLI and a TLS-only redis-server (see tls.hpp).
#include "idemgate/test/tls.hpp"

#include <chrono>
#include <signal.h>
#include <stdexcept>
#include <thread>

namespace idemgate::test {

namespace {

const std::vector<std::string> ec_p256{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"};

std::string run_to_end(child_process& proc, const std::string& what)
{
    auto status = proc.wait_exit(30s);
    if (!status || *status != 0)
        throw std::runtime_error(what + " failed (exit " + (status ? std::to_string(*status) : "timeout") +
                                 "):\n" + proc.output());
    std::string out;
    for (const auto& line : proc.lines())
        out += (out.empty() ? "" : "\n") + line;
    return out;
}

} // namespace

test_certificates::test_certificates()
{
    const auto& d = dir_.path();
    ca_cert = d + "/ca.crt";
    std::vector<std::string> ca{"req", "-x509", "-new"};
    ca.insert(ca.end(), ec_p256.begin(), ec_p256.end());
    ca.insert(ca.end(), {"-keyout", d + "/ca.key", "-out", ca_cert, "-days", "2", "-subj",
                         "/CN=idemgate test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext",
                         "keyUsage=critical,keyCertSign,cRLSign"});
    openssl(ca);

    // clientAuth too: the nodes of a TLS cluster present it to each other on the cluster bus,
    // which always asks for a client certificate.
    make_leaf("server",
              "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n");
    server_cert = d + "/server.crt";
    server_key = d + "/server.key";
    make_leaf("client", "extendedKeyUsage=clientAuth\n");
    client_cert = d + "/client.crt";
    client_key = d + "/client.key";

    other_ca_cert = d + "/other-ca.crt";
    std::vector<std::string> other{"req", "-x509", "-new"};
    other.insert(other.end(), ec_p256.begin(), ec_p256.end());
    other.insert(other.end(), {"-keyout", d + "/other-ca.key", "-out", other_ca_cert, "-days", "2", "-subj",
                               "/CN=unrelated test CA", "-addext", "basicConstraints=critical,CA:TRUE"});
    openssl(other);

    stray_key = d + "/stray.key";
    openssl({"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", stray_key});

    make_leaf("wrong-name", "subjectAltName=DNS:wrong.example\nextendedKeyUsage=serverAuth\n");
    wrong_name_cert = d + "/wrong-name.crt";
    wrong_name_key = d + "/wrong-name.key";

    // `openssl x509 -req` cannot date a certificate in the past; `openssl ca` can (-startdate,
    // -enddate), with a minimal CA database of its own.
    std::vector<std::string> req{"req", "-new"};
    req.insert(req.end(), ec_p256.begin(), ec_p256.end());
    req.insert(req.end(), {"-keyout", d + "/expired.key", "-out", d + "/expired.csr", "-subj",
                           "/CN=idemgate test expired"});
    openssl(req);
    dir_.write_file("index.txt", "");
    dir_.write_file("serial", "10\n");
    auto cnf =
        dir_.write_file("ca.cnf", "[ca]\ndefault_ca=test\n[test]\ndatabase=" + d +
                                      "/index.txt\nnew_certs_dir=" + d + "\nserial=" + d +
                                      "/serial\ndefault_md=sha256\npolicy=any\n[any]\ncommonName=supplied\n");
    auto ext = dir_.write_file("expired.ext",
                               "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                               "extendedKeyUsage=serverAuth\n");
    expired_cert = d + "/expired.crt";
    expired_key = d + "/expired.key";
    openssl({"ca", "-batch", "-config", cnf, "-cert", ca_cert, "-keyfile", d + "/ca.key", "-startdate",
             "20200101000000Z", "-enddate", "20200102000000Z", "-in", d + "/expired.csr", "-out",
             expired_cert, "-extfile", ext, "-notext"});
}

void test_certificates::make_leaf(const std::string& name, const std::string& extensions,
                                  std::string common_name)
{
    const auto& d = dir_.path();
    if (common_name.empty())
        common_name = "idemgate test " + name;
    std::vector<std::string> req{"req", "-new"};
    req.insert(req.end(), ec_p256.begin(), ec_p256.end());
    req.insert(req.end(), {"-keyout", d + "/" + name + ".key", "-out", d + "/" + name + ".csr", "-subj",
                           "/CN=" + common_name});
    openssl(req);
    auto ext = dir_.write_file(name + ".ext", "basicConstraints=CA:FALSE\n" + extensions);
    openssl({"x509", "-req", "-in", d + "/" + name + ".csr", "-CA", ca_cert, "-CAkey", d + "/ca.key",
             "-set_serial", std::to_string(next_serial_++), "-days", "2", "-extfile", ext, "-out",
             d + "/" + name + ".crt"});
}

test_certificates::leaf test_certificates::make_client(const std::string& file_name,
                                                       const std::string& common_name)
{
    make_leaf(file_name, "extendedKeyUsage=clientAuth\n", common_name);
    return {dir_.path() + "/" + file_name + ".crt", dir_.path() + "/" + file_name + ".key"};
}

void test_certificates::openssl(const std::vector<std::string>& args)
{
    child_process proc("openssl", args);
    run_to_end(proc, "openssl " + args.front());
}

// ---------------------------------------------------------------------------------------------

tls_redis_server::tls_redis_server(const test_certificates& certs, bool auth_clients,
                                   std::vector<std::string> extra_args)
    : certs_(certs), auth_clients_(auth_clients), extra_args_(std::move(extra_args))
{
    // The port was free a moment ago; if another process took it, redis exits and we retry.
    for (int attempt = 0;; ++attempt) {
        try {
            start();
            return;
        } catch (const std::exception&) {
            if (attempt >= 2)
                throw;
        }
    }
}

tls_redis_server::~tls_redis_server()
{
    if (proc_) {
        proc_->signal(SIGKILL);
        proc_->wait_exit(10s);
    }
}

void tls_redis_server::start()
{
    port_ = free_port();
    std::vector<std::string> args{"--port", "0", "--tls-port", std::to_string(port_), "--bind", "127.0.0.1",
                                  "--save", "", "--appendonly", "no", "--dir", dir_.path(), "--daemonize",
                                  "no", "--tls-cert-file", certs_.server_cert, "--tls-key-file",
                                  certs_.server_key, "--tls-ca-cert-file", certs_.ca_cert,
                                  "--tls-auth-clients", auth_clients_ ? "yes" : "no",
                                  // a replica's first sync at once (see servers.cpp)
                                  "--repl-diskless-sync-delay", "0"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    proc_ = std::make_unique<child_process>("redis-server", args);
    // Redis logs this once it listens on every port; it exits if the TLS port was taken.
    auto ready = proc_->wait_for_line(
        [](const std::string& l) { return l.find("Ready to accept connections") != std::string::npos; }, 10s);
    if (!ready) {
        auto log = proc_->output();
        proc_->signal(SIGKILL);
        proc_->wait_exit(10s);
        proc_.reset();
        throw std::runtime_error("TLS redis-server did not become ready:\n" + log);
    }
}

std::string tls_redis_server::cli(const std::vector<std::string>& args)
{
    std::vector<std::string> all{
        "--tls",           "--cacert", certs_.ca_cert, "--cert", certs_.client_cert,   "--key",
        certs_.client_key, "-h",       "127.0.0.1",    "-p",     std::to_string(port_)};
    all.insert(all.end(), args.begin(), args.end());
    child_process proc("redis-cli", all);
    return run_to_end(proc, "redis-cli");
}

// ---------------------------------------------------------------------------------------------

tls_redis_cluster::tls_redis_cluster(const test_certificates& certs)
{
    for (int i = 0; i < 3; ++i)
        nodes_.push_back(std::make_unique<tls_redis_server>(
            certs, false,
            std::vector<std::string>{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                                     "--cluster-port", std::to_string(free_port()), "--cluster-node-timeout",
                                     "2000", "--tls-cluster", "yes"}));
    std::vector<std::string> args{"--cluster", "create"};
    for (const auto& a : addresses())
        args.push_back(a);
    args.insert(args.end(), {"--cluster-replicas", "0", "--cluster-yes"});
    nodes_[0]->cli(args);
    // Every node sees all slots served (the bus gossips the new configuration).
    auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
        int ok = 0;
        for (auto& n : nodes_) {
            auto info = n->cli({"CLUSTER", "INFO"});
            if (info.find("cluster_state:ok") != std::string::npos &&
                info.find("cluster_slots_ok:16384") != std::string::npos)
                ++ok;
        }
        if (ok == 3)
            return;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the TLS cluster did not reach cluster_state:ok within 30 s");
        std::this_thread::sleep_for(100ms); // polling the cluster's own state
    }
}

std::vector<std::string> tls_redis_cluster::addresses() const
{
    std::vector<std::string> out;
    for (const auto& n : nodes_)
        out.push_back(n->address());
    return out;
}

} // namespace idemgate::test
