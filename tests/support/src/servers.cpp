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
    std::string out = "*" + std::to_string(args.size()) + "\r\n";
    for (auto& a : args)
        out += "$" + std::to_string(a.size()) + "\r\n" + a + "\r\n";
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
        "--port", std::to_string(port_), "--bind",      "127.0.0.1", "--save", "", "--appendonly", "no",
        "--dir",  dir_.path(),           "--daemonize", "no"};
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
    proc_ = std::make_unique<child_process>(
        bin_dir() + "/idemgate", std::vector<std::string>{"--config", config_path_}, std::move(extra_env));
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

test_upstream_process::test_upstream_process()
{
    proc_ = std::make_unique<child_process>(bin_dir() + "/idemgate-test-upstream",
                                            std::vector<std::string>{"--port", "0"});
    const std::string prefix = "listening 127.0.0.1:";
    auto line = proc_->wait_for_line([&](const std::string& l) { return l.rfind(prefix, 0) == 0; }, 10s);
    if (!line)
        throw std::runtime_error("idemgate-test-upstream did not start; output:\n" + proc_->output());
    port_ = static_cast<std::uint16_t>(std::stoul(line->substr(prefix.size())));
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
