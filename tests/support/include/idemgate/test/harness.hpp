// SPDX-License-Identifier: Apache-2.0
#pragma once
#include <cstdlib>
// Test harness shared by every integration test: real processes, real sockets, free ports,
// readiness by waiting on the event (a log line, a successful PING), never by sleeping.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace idemgate::test {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

// Directory of the built binaries (build/bin), from the IDEMGATE_BIN_DIR compile definition.
std::string bin_dir();

// The gateway binary under test: IDEMGATE_TEST_GATEWAY when set (the sanitizer pass runs these
// tests against its own sanitized build of the gateway), else bin_dir()/idemgate.
std::string gateway_bin();
// The I/O backend that gateway was built with ("epoll" or "io_uring"): IDEMGATE_TEST_GATEWAY_IO
// beside IDEMGATE_TEST_GATEWAY, else the calling test's build's (a test linked with idemgate::common
// sees its IDEMGATE_IO_URING).
inline std::string gateway_io_backend()
{
    if (const char* chosen = std::getenv("IDEMGATE_TEST_GATEWAY_IO"); chosen && *chosen)
        return chosen;
#ifdef IDEMGATE_IO_URING
    return "io_uring";
#else
    return "epoll";
#endif
}

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0, read it, close).
std::uint16_t free_port();

// A socket listening on 127.0.0.1 at a port the kernel picked: the raw servers tests script
// byte by byte. `receive_buffer` (SO_RCVBUF, set before listen so accepted sockets inherit it)
// when not 0. Throws std::runtime_error naming `who` when it cannot listen; the caller closes fd.
struct loopback_listener {
    int fd = -1;
    std::uint16_t port = 0;
};
loopback_listener listen_on_loopback(const char* who, int backlog, int receive_buffer = 0);

// Polls `pred` every `every` until it holds or `timeout` has passed; whether it held. A test waits
// this way for the effect it needs (a counter, a log line, a server's state), not for a guessed time.
bool poll_until(milliseconds timeout, const std::function<bool()>& pred, milliseconds every = 20ms);

// The same where the test cannot go on without it: throws std::runtime_error "timed out after
// <timeout> ms waiting until <what>" (doctest reports it as the case's failure) when `pred` did
// not hold in time.
void wait_until(const std::string& what, milliseconds timeout, const std::function<bool()>& pred,
                milliseconds every = 20ms);

// A fresh temporary directory, removed (recursively) when the object dies.
class temp_dir {
public:
    temp_dir();
    ~temp_dir();
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
    const std::string& path() const { return path_; }
    // Writes `content` to path()/name and returns the full path.
    std::string write_file(const std::string& name, const std::string& content) const;

private:
    std::string path_;
};

// A child process with stdout+stderr captured line by line on a reader thread.
// The destructor sends SIGKILL if it is still running and reaps it.
class child_process {
public:
    child_process(std::string program, std::vector<std::string> args,
                  std::vector<std::pair<std::string, std::string>> extra_env = {});
    ~child_process();
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;

    int pid() const { return pid_; }
    // Waits until a captured line satisfies `pred`; returns it, or nullopt on timeout or exit.
    std::optional<std::string> wait_for_line(const std::function<bool(const std::string&)>& pred,
                                             milliseconds timeout = 10s);
    // Lines captured so far.
    std::vector<std::string> lines() const;
    // Lines captured so far, each indented and newline-terminated (for failure messages).
    std::string output() const;
    void signal(int sig);
    // Stops (true) or resumes reading the child's output. Paused, the pipe fills and the
    // child's writes to stdout block: a log sink slower than the child.
    void pause_output(bool paused);
    // Waits for exit; returns the exit status (WEXITSTATUS, or 128+signal), nullopt on timeout.
    std::optional<int> wait_exit(milliseconds timeout = 10s);
    bool running();

private:
    struct impl;
    std::unique_ptr<impl> impl_;
    int pid_ = -1;
};

// One command to the Redis (or Sentinel) on 127.0.0.1:port; the raw RESP reply.
std::string redis_command(std::uint16_t port, const std::vector<std::string>& args,
                          milliseconds timeout = 5s);

// A private redis-server on a free port (never 6379), no persistence by default.
class redis_server {
public:
    // `extra_args` are appended to the redis-server command line (e.g. {"--appendonly", "yes"}).
    explicit redis_server(std::vector<std::string> extra_args = {});
    ~redis_server();
    std::uint16_t port() const { return port_; }
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    // Stops it (SIGKILL when hard, else SHUTDOWN NOSAVE semantics via SIGTERM).
    void stop(bool hard = false);
    // Starts it again on the same port and the same data directory; waits for PING.
    void start();
    // Sends one command (arguments) and returns the raw RESP reply (blocking, for assertions).
    std::string command(const std::vector<std::string>& args);

private:
    std::vector<std::string> extra_args_;
    temp_dir dir_;
    std::uint16_t port_;
    std::unique_ptr<child_process> proc_;
};

// A Redis Cluster of 3 primaries + 3 replicas on free loopback ports: six
// redis-server processes with their own bus ports, joined by `redis-cli --cluster create`; the
// constructor returns once every node reports cluster_state:ok with all slots served.
class redis_cluster {
public:
    redis_cluster();
    std::size_t size() const { return nodes_.size(); }
    redis_server& node(std::size_t i) { return *nodes_[i]; }
    // "host:port" of every node.
    std::vector<std::string> addresses() const;
    // The index of the node serving `key` as primary (CLUSTER KEYSLOT + CLUSTER SHARDS).
    std::size_t primary_for(const std::string& key);
    // The index of a primary other than `not_this`.
    std::size_t other_primary(std::size_t not_this);
    // Node ids (CLUSTER MYID).
    std::string id_of(std::size_t i);
    // Whether every live node reports cluster_state:ok.
    bool ok();
    // Waits (bounded) until ok().
    bool wait_ok(milliseconds timeout = 20s);
    // Kills every node (a store that is gone).
    void stop_all();

private:
    std::vector<std::unique_ptr<redis_server>> nodes_;
};

// The real idemgate binary with a YAML config. In the YAML text, "${LISTEN}" and "${ADMIN}"
// are replaced by 127.0.0.1:0 unless given; the actual ports are read from the start-up line
// {"msg":"listening","listen":"127.0.0.1:P","admin_listen":"127.0.0.1:Q",...}.
class gateway_process {
public:
    explicit gateway_process(const std::string& yaml,
                             std::vector<std::pair<std::string, std::string>> extra_env = {});
    std::uint16_t port() const { return port_; }
    std::uint16_t admin_port() const { return admin_port_; }
    child_process& process() { return *proc_; }
    const std::string& config_path() const { return config_path_; }

private:
    temp_dir dir_;
    std::string config_path_;
    std::unique_ptr<child_process> proc_;
    std::uint16_t port_ = 0;
    std::uint16_t admin_port_ = 0;
};

// The test upstream (build/bin/idemgate-test-upstream) on a free port. See test_upstream.cpp
// for what it answers; GET /__count returns the number of non-/__ requests it executed.
class test_upstream_process {
public:
    // `extra_args` e.g. {"--tls-cert", crt, "--tls-key", key}: also serve HTTPS on tls_port().
    explicit test_upstream_process(std::vector<std::string> extra_args = {});
    std::uint16_t port() const { return port_; }
    std::uint16_t tls_port() const { return tls_port_; } // 0 without --tls-cert
    std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
    // Executions so far (GET /__count over a fresh connection).
    long executions();
    child_process& process() { return *proc_; }
    // SIGKILL, reap, then wait (at most 5 s) until its port refuses connections. A process whose
    // sockets sit in an io_uring instance keeps its listener open for some milliseconds after it
    // is reaped, while the kernel tears the ring down: the kernel still completes handshakes there
    // and the connections are then reset. Tests that mean "this member is down" want refusals.
    void kill();

private:
    std::unique_ptr<child_process> proc_;
    std::string host_;
    std::uint16_t port_ = 0;
    std::uint16_t tls_port_ = 0;
};

struct http_response {
    int status = 0;
    std::string reason;
    std::multimap<std::string, std::string> headers; // names lower-cased
    std::string body;
    std::string raw; // bytes as received (status line through end of body)
    std::string header(const std::string& lower_name) const; // first value or ""
    bool has_header(const std::string& lower_name) const { return headers.count(lower_name) > 0; }
};

// What an HTTPS client (http_connection over TLS, OpenSSL) offers and checks.
struct tls_client_options {
    std::string ca_file;                   // verify the server's chain against it ("" = no verification)
    std::string verify_name = "127.0.0.1"; // the name (or IP) the certificate must carry ("" = chain only)
    std::string sni;                       // server name indication ("" = none)
    std::string cert_file;                 // client certificate (mutual TLS), with key_file
    std::string key_file;
    int min_version = 0; // 0x0303 TLS 1.2, 0x0304 TLS 1.3; 0 = OpenSSL's default
    int max_version = 0;
    std::vector<std::string> alpn{"http/1.1"}; // protocols offered ({} = no ALPN extension)
    std::shared_ptr<void> session;             // a previous connection's tls_session(), to resume
};

// A TLS handshake or TLS read that failed (the message carries OpenSSL's reason).
class tls_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A blocking HTTP/1.1 client over one keep-alive TCP connection, with raw access so tests
// can send smuggling shapes byte for byte. Every call has a timeout.
class http_connection {
public:
    explicit http_connection(std::uint16_t port, milliseconds timeout = 10s);
    // The same over TLS: connects and shakes hands (throws tls_error if the handshake fails; with
    // TLS 1.3 a refused client certificate only shows on the first read).
    http_connection(std::uint16_t port, const tls_client_options& tls, milliseconds timeout = 10s);
    ~http_connection();
    http_connection(const http_connection&) = delete;
    http_connection& operator=(const http_connection&) = delete;

    void send_raw(const std::string& bytes);
    // Reads one response (Content-Length, chunked, or until close). Throws on timeout.
    http_response read_response(bool head_request = false);
    // Sends method/path with headers and body (adds Host and Content-Length unless present).
    http_response request(const std::string& method, const std::string& path,
                          const std::vector<std::pair<std::string, std::string>>& headers = {},
                          const std::string& body = {});
    // True when the peer has closed the connection (reads EOF within `wait`).
    bool closed_by_peer(milliseconds wait = 2s);
    void close();
    // Half-closes: shuts down the sending side, so the peer reads EOF after the bytes sent,
    // while its answer can still be read.
    void shutdown_send();
    // Reads until `delimiter` has arrived and returns the bytes up to and including it, leaving
    // the rest for read_response (e.g. an interim "100 Continue" head). Throws on timeout or EOF.
    std::string read_until(const std::string& delimiter);

    // TLS only: whether the session was resumed, the session (for tls_client_options::session),
    // the negotiated ALPN protocol and version ("TLSv1.3").
    bool tls_session_reused() const;
    std::shared_ptr<void> tls_session() const;
    std::string tls_alpn() const;
    std::string tls_version() const;

private:
    struct tls_state;
    // Reads more bytes into buffer_; false on orderly EOF, throws on timeout or error.
    bool read_more();

    int fd_ = -1;
    std::shared_ptr<tls_state> tls_;
    milliseconds timeout_;
    std::string buffer_;
};

// One request over a fresh HTTPS connection.
http_response https_request(std::uint16_t port, const tls_client_options& tls, const std::string& method,
                            const std::string& path,
                            const std::vector<std::pair<std::string, std::string>>& headers = {},
                            const std::string& body = {}, milliseconds timeout = 4s);

// One request over a fresh connection.
http_response http_request(std::uint16_t port, const std::string& method, const std::string& path,
                           const std::vector<std::pair<std::string, std::string>>& headers = {},
                           const std::string& body = {});

// The same with an explicit per-call socket timeout (tests that expect prompt answers).
http_response http_request(std::uint16_t port, const std::string& method, const std::string& path,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& body, milliseconds timeout);

// The value of the Prometheus sample `series` (e.g. `name{label="v"}`) on the admin port's
// /metrics, or -1 when absent.
double metric(std::uint16_t admin_port, const std::string& series);

} // namespace idemgate::test
