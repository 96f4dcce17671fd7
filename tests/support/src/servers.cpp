// SPDX-License-Identifier: Apache-2.0
// The real servers the integration tests run: redis-server, idemgate, idemgate-test-upstream.
#include "idemgate/test/harness.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <signal.h>
#include <stdexcept>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace idemgate::test {

namespace detail {
int connect_loopback(std::uint16_t port, milliseconds timeout);
} // namespace detail

namespace {

// Length of the first complete RESP reply in `buf` starting at `pos`, or 0 if incomplete.
std::size_t resp_complete(const std::string& buf, std::size_t pos)
{
    if (pos >= buf.size())
        return 0;
    auto eol = buf.find("\r\n", pos);
    if (eol == std::string::npos)
        return 0;
    char type = buf[pos];
    std::size_t after_line = eol + 2;
    switch (type) {
    case '+':
    case '-':
    case ':': return after_line - pos;
    case '$': {
        long len = std::stol(buf.substr(pos + 1, eol - pos - 1));
        if (len < 0)
            return after_line - pos;
        std::size_t end = after_line + static_cast<std::size_t>(len) + 2;
        return end <= buf.size() ? end - pos : 0;
    }
    case '*': {
        long count = std::stol(buf.substr(pos + 1, eol - pos - 1));
        std::size_t cur = after_line;
        for (long i = 0; i < count; ++i) {
            std::size_t n = resp_complete(buf, cur);
            if (n == 0)
                return 0;
            cur += n;
        }
        return cur - pos;
    }
    default: throw std::runtime_error("redis_server: unexpected RESP type in: " + buf);
    }
}

std::string resp_command(std::uint16_t port, const std::vector<std::string>& args, milliseconds timeout)
{
    int fd = detail::connect_loopback(port, timeout);
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive) on "x" + std::string.
    std::string out = "*";
    out += std::to_string(args.size());
    out += "\r\n";
    for (auto& a : args) {
        out += '$';
        out += std::to_string(a.size());
        out += "\r\n";
        out += a;
        out += "\r\n";
    }
    std::size_t sent = 0;
    while (sent < out.size()) {
        ssize_t n = ::send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ::close(fd);
            throw std::runtime_error("redis_server: send failed");
        }
        sent += static_cast<std::size_t>(n);
    }
    std::string reply;
    char chunk[4096];
    while (resp_complete(reply, 0) == 0) {
        ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ::close(fd);
            throw std::runtime_error("redis_server: no complete reply (got: " + reply + ")");
        }
        reply.append(chunk, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return reply;
}

} // namespace

// ---------------------------------------------------------------------------------------------

std::string redis_command(std::uint16_t port, const std::vector<std::string>& args, milliseconds timeout)
{
    return resp_command(port, args, timeout);
}

redis_server::redis_server(std::vector<std::string> extra_args)
    : extra_args_(std::move(extra_args)), port_(free_port())
{
    // The port was free a moment ago; if another process took it, redis exits and we retry.
    for (int attempt = 0;; ++attempt) {
        try {
            start();
            return;
        } catch (const std::exception&) {
            if (attempt >= 2)
                throw;
            port_ = free_port();
        }
    }
}

redis_server::~redis_server()
{
    stop(true);
}

void redis_server::start()
{
    if (proc_)
        return;
    std::vector<std::string> args{
        "--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
        dir_.path(), "--daemonize", "no",
        // A replica's first sync starts at once: Redis 7 waits 5 s by default for more replicas
        // to share a diskless transfer, which every cluster and replica set here paid.
        "--repl-diskless-sync-delay", "0"};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    proc_ = std::make_unique<child_process>("redis-server", args);

    // Ready when PING answers +PONG: retry the connect (bounded, ~10 s) while redis loads.
    auto deadline = std::chrono::steady_clock::now() + 10s;
    std::string last_error;
    while (std::chrono::steady_clock::now() < deadline) {
        if (!proc_->running()) {
            std::string log = proc_->output();
            proc_.reset();
            throw std::runtime_error("redis-server exited before answering PING:\n" + log);
        }
        try {
            if (resp_command(port_, {"PING"}, 1s) == "+PONG\r\n")
                return;
        } catch (const std::exception& e) {
            last_error = e.what();
        }
        std::this_thread::sleep_for(10ms); // connect retry backoff, not a readiness sleep
    }
    std::string log = proc_->output();
    proc_.reset();
    throw std::runtime_error("redis-server did not answer PING within 10 s (" + last_error + "):\n" + log);
}

void redis_server::stop(bool hard)
{
    if (!proc_)
        return;
    proc_->signal(hard ? SIGKILL : SIGTERM);
    proc_->wait_exit(10s);
    proc_.reset();
}

std::string redis_server::command(const std::vector<std::string>& args)
{
    return resp_command(port_, args, 5s);
}

// ---------------------------------------------------------------------------------------------

redis_cluster::redis_cluster()
{
    for (int i = 0; i < 6; ++i)
        nodes_.push_back(std::make_unique<redis_server>(std::vector<std::string>{
            "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-port",
            std::to_string(free_port()), "--cluster-node-timeout", "2000"}));
    std::vector<std::string> args{"--cluster", "create"};
    for (const auto& a : addresses())
        args.push_back(a);
    args.insert(args.end(), {"--cluster-replicas", "1", "--cluster-yes"});
    child_process create("redis-cli", args);
    auto rc = create.wait_exit(60s);
    if (rc != 0)
        throw std::runtime_error("redis-cli --cluster create failed:\n" + create.output());
    if (!wait_ok(30s))
        throw std::runtime_error("the cluster did not reach cluster_state:ok within 30 s");
    // And every replica has finished its first sync (WAIT and failover tests count on it).
    auto deadline = std::chrono::steady_clock::now() + 30s;
    for (;;) {
        int linked = 0;
        for (auto& n : nodes_)
            if (n->command({"INFO", "replication"}).find("master_link_status:up") != std::string::npos)
                ++linked;
        if (linked == 3)
            break;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the cluster's replicas did not finish syncing within 30 s");
        std::this_thread::sleep_for(50ms); // polling the replicas' own state
    }
    // And every node knows every replica as one (gossip): a client's slot map lists each shard's
    // replica, and a CLUSTER FAILOVER finds the cluster as the failover cases expect.
    for (;;) {
        int agreeing = 0;
        for (auto& n : nodes_) {
            auto nodes = n->command({"CLUSTER", "NODES"});
            int replicas = 0;
            for (std::size_t at = 0; (at = nodes.find(" slave ", at)) != std::string::npos; ++at)
                ++replicas;
            for (std::size_t at = 0; (at = nodes.find(",slave ", at)) != std::string::npos; ++at)
                ++replicas;
            if (replicas == 3 && nodes.find("handshake") == std::string::npos)
                ++agreeing;
        }
        if (agreeing == 6)
            break;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the cluster's nodes did not agree on its replicas within 30 s");
        std::this_thread::sleep_for(50ms); // polling the cluster's own state
    }
}

std::vector<std::string> redis_cluster::addresses() const
{
    std::vector<std::string> out;
    for (const auto& n : nodes_)
        out.push_back(n->address());
    return out;
}

bool redis_cluster::ok()
{
    for (auto& n : nodes_) {
        std::string info;
        try {
            info = n->command({"CLUSTER", "INFO"});
        } catch (const std::exception&) {
            continue; // a stopped node
        }
        if (info.find("cluster_state:ok") == std::string::npos ||
            info.find("cluster_slots_ok:16384") == std::string::npos)
            return false;
    }
    return true;
}

bool redis_cluster::wait_ok(milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (ok())
            return true;
        std::this_thread::sleep_for(50ms); // polling the cluster's own state
    }
    return ok();
}

std::string redis_cluster::id_of(std::size_t i)
{
    auto reply = nodes_[i]->command({"CLUSTER", "MYID"});
    // $40\r\n<id>\r\n
    auto start = reply.find("\r\n");
    return reply.substr(start + 2, 40);
}

std::size_t redis_cluster::primary_for(const std::string& key)
{
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        std::string reply;
        try {
            reply = nodes_[i]->command({"GET", key});
        } catch (const std::exception&) {
            continue;
        }
        // A primary answers the key (nil or a value); others redirect (MOVED) or refuse.
        if (reply.rfind("-MOVED", 0) != 0 && reply.rfind("-", 0) != 0)
            return i;
    }
    throw std::runtime_error("no node serves key " + key);
}

std::size_t redis_cluster::other_primary(std::size_t not_this)
{
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (i == not_this)
            continue;
        std::string info;
        try {
            info = nodes_[i]->command({"ROLE"});
        } catch (const std::exception&) {
            continue;
        }
        if (info.find("master") != std::string::npos)
            return i;
    }
    throw std::runtime_error("no other primary");
}

void redis_cluster::stop_all()
{
    for (auto& n : nodes_)
        n->stop(true);
}

// ---------------------------------------------------------------------------------------------

namespace {

void replace_all(std::string& text, const std::string& from, const std::string& to)
{
    for (std::size_t pos = 0; (pos = text.find(from, pos)) != std::string::npos; pos += to.size())
        text.replace(pos, from.size(), to);
}

// Port of `"key":"host:port"` in a JSON log line, 0 when absent.
std::uint16_t json_endpoint_port(const std::string& line, const std::string& key)
{
    std::string needle = "\"" + key + "\":\"";
    auto pos = line.find(needle);
    if (pos == std::string::npos)
        return 0;
    auto start = pos + needle.size();
    auto end = line.find('"', start);
    auto value = line.substr(start, end - start);
    auto colon = value.rfind(':');
    if (colon == std::string::npos)
        return 0;
    return static_cast<std::uint16_t>(std::stoul(value.substr(colon + 1)));
}

} // namespace

gateway_process::gateway_process(const std::string& yaml,
                                 std::vector<std::pair<std::string, std::string>> extra_env)
{
    std::string text = yaml;
    replace_all(text, "${LISTEN}", "127.0.0.1:0");
    replace_all(text, "${ADMIN}", "127.0.0.1:0");
    config_path_ = dir_.write_file("idemgate.yaml", text);
    proc_ = std::make_unique<child_process>(gateway_bin(), std::vector<std::string>{"--config", config_path_},
                                            std::move(extra_env));
    auto line = proc_->wait_for_line(
        [](const std::string& l) { return l.find("\"msg\":\"listening\"") != std::string::npos; }, 10s);
    if (!line)
        throw std::runtime_error("idemgate did not log \"listening\" within 10 s; output:\n" +
                                 proc_->output() + "config:\n" + text);
    port_ = json_endpoint_port(*line, "listen");
    admin_port_ = json_endpoint_port(*line, "admin_listen");
    if (port_ == 0)
        throw std::runtime_error("idemgate listening line has no listen port: " + *line);
}

// ---------------------------------------------------------------------------------------------

test_upstream_process::test_upstream_process(std::vector<std::string> extra_args)
{
    // With {"--host", "127.0.0.2", "--port", "P"} it listens elsewhere than 127.0.0.1:0 (upstream
    // fleets whose addresses differ only by IP); address() and executions() still say 127.0.0.1.
    bool tls = false;
    bool has_port = false;
    std::string host = "127.0.0.1";
    for (std::size_t i = 0; i < extra_args.size(); ++i) {
        tls = tls || extra_args[i] == "--tls-cert";
        has_port = has_port || extra_args[i] == "--port";
        if (extra_args[i] == "--host" && i + 1 < extra_args.size())
            host = extra_args[i + 1];
    }
    std::vector<std::string> args;
    if (!has_port)
        args = {"--port", "0"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    proc_ = std::make_unique<child_process>(bin_dir() + "/idemgate-test-upstream", args);
    host_ = host;
    const std::string prefix = "listening " + host + ":";
    auto line = proc_->wait_for_line([&](const std::string& l) { return l.rfind(prefix, 0) == 0; }, 10s);
    if (!line)
        throw std::runtime_error("idemgate-test-upstream did not start; output:\n" + proc_->output());
    port_ = static_cast<std::uint16_t>(std::stoul(line->substr(prefix.size())));
    if (tls) {
        const std::string tls_prefix = "listening-tls " + host + ":";
        auto tls_line =
            proc_->wait_for_line([&](const std::string& l) { return l.rfind(tls_prefix, 0) == 0; }, 10s);
        if (!tls_line)
            throw std::runtime_error("idemgate-test-upstream did not serve TLS; output:\n" + proc_->output());
        tls_port_ = static_cast<std::uint16_t>(std::stoul(tls_line->substr(tls_prefix.size())));
    }
}

void test_upstream_process::kill()
{
    proc_->signal(SIGKILL);
    if (!proc_->wait_exit(5s))
        throw std::runtime_error("idemgate-test-upstream did not exit within 5 s of SIGKILL");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port_);
    ::inet_pton(AF_INET, host_.c_str(), &addr.sin_addr);
    auto deadline = std::chrono::steady_clock::now() + 5s;
    for (;;) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
        ::close(fd);
        if (rc != 0)
            return; // refused: the listener is gone
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("the killed test upstream's port still accepts after 5 s");
        std::this_thread::sleep_for(5ms); // poll interval while the kernel releases the port
    }
}

long test_upstream_process::executions()
{
    auto res = http_request(port_, "GET", "/__count");
    auto pos = res.body.find("\"executions\":");
    if (res.status != 200 || pos == std::string::npos)
        throw std::runtime_error("test upstream /__count answered: " + res.raw);
    return std::stol(res.body.substr(pos + 13));
}

} // namespace idemgate::test
