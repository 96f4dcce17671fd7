// SPDX-License-Identifier: Apache-2.0
#include "redis_test_support.hpp"

#include <arpa/inet.h>
#include <cstring>
#include <doctest/doctest.h>
#include <idemgate/store/record_codec.hpp>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace idemgate::test {

io_thread::io_thread()
    : work_(boost::asio::make_work_guard(ioc_)), thread_([this] {
          ioc_.run();
          done_ = true;
      })
{
}

io_thread::~io_thread()
{
    finish();
}

bool io_thread::finish(std::chrono::milliseconds timeout)
{
    if (!thread_.joinable())
        return true;
    work_.reset();
    bool clean = eventually([this] { return done_.load(); }, timeout);
    if (!clean)
        ioc_.stop();
    thread_.join();
    return clean;
}

bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (pred())
            return true;
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(5)); // poll interval of the event
    }
}

config::redis_config redis_config_for(std::uint16_t port)
{
    config::redis_config cfg;
    cfg.address = {"127.0.0.1", port};
    cfg.key_prefix = "test";
    cfg.command_timeout = std::chrono::milliseconds(1000);
    cfg.connect_timeout = std::chrono::milliseconds(1000);
    cfg.reconnect_backoff_max = std::chrono::milliseconds(200);
    return cfg;
}

int readyz(const gateway_process& gw)
{
    try {
        return http_request(gw.admin_port(), "GET", "/readyz", {}, {}, 1s).status;
    } catch (const std::exception&) {
        return 0;
    }
}

std::unique_ptr<gateway_process> start_gateway(const std::string& yaml)
{
    auto gw = std::make_unique<gateway_process>(yaml);
    REQUIRE_MESSAGE(eventually([&] { return readyz(*gw) == 200; }, 10s), gw->process().output());
    return gw;
}

http_response post(const gateway_process& gw, const std::string& key, const std::string& body,
                   std::vector<std::pair<std::string, std::string>> headers)
{
    headers.emplace_back("Idempotency-Key", key);
    headers.emplace_back("Content-Type", "application/json");
    return http_request(gw.port(), "POST", "/api/orders", headers, body, 5s);
}

std::string unique_key(const std::string& stem)
{
    static std::atomic<int> n{0};
    return stem + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

std::string fingerprint_of(const std::string& seed)
{
    static constexpr char hex[] = "0123456789abcdef";
    std::string out(64, '0');
    std::size_t h = std::hash<std::string>{}(seed);
    for (std::size_t i = 0; i < out.size(); ++i) {
        out[i] = hex[h & 0xf];
        h = h >> 4 | (h << 60);
        h ^= i * 0x9e3779b97f4a7c15ULL;
    }
    return out;
}

store::record in_flight_record(const std::string& token, const std::string& fingerprint)
{
    store::record r;
    r.state = store::record_state::in_flight;
    r.owner_token = token;
    r.fingerprint = fingerprint;
    r.created_unix_ms = 1764400000000;
    return r;
}

store::record completed_record(const std::string& token, const std::string& body,
                               const std::string& fingerprint)
{
    auto r = in_flight_record(token, fingerprint);
    r.state = store::record_state::completed;
    r.response.status = 201;
    r.response.reason = "Created";
    r.response.headers = {{"content-type", "application/json"}, {"x-request-id", "abc"}};
    r.response.body = body;
    return r;
}

std::string resp_bulk(const std::string& s)
{
    // Built with +=: GCC 12 warns falsely (-Wrestrict) on "..." + std::to_string(...).
    std::string out(1, '$');
    out += std::to_string(s.size());
    out += "\r\n";
    out += s;
    out += "\r\n";
    return out;
}

// ---------------------------------------------------------------------------------------------

fake_redis::fake_redis(answer_fn answer) : answer_(std::move(answer))
{
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    if (listen_fd_ < 0)
        throw std::runtime_error("fake_redis: socket failed");
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0)
        throw std::runtime_error("fake_redis: bind/listen failed");
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
}

fake_redis::~fake_redis()
{
    stopping_ = true;
    acceptor_.join(); // no new threads after this; each serving thread sees stopping_ in 20 ms
    for (auto& t : threads_)
        t.join();
    ::close(listen_fd_);
}

std::vector<std::vector<std::string>> fake_redis::commands() const
{
    std::lock_guard lock(mutex_);
    return commands_;
}

void fake_redis::accept_loop()
{
    while (!stopping_) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0)
            continue;
        int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd < 0)
            continue;
        int n = connections_++;
        std::lock_guard lock(mutex_);
        threads_.emplace_back([this, fd, n] { serve(fd, n); });
    }
}

namespace {

// Parses one RESP array of bulk strings from the front of `buf`; false if incomplete.
bool parse_command(std::string& buf, std::vector<std::string>& out)
{
    out.clear();
    std::size_t pos = 0;
    auto line = [&](std::string& text) {
        auto end = buf.find("\r\n", pos);
        if (end == std::string::npos)
            return false;
        text = buf.substr(pos, end - pos);
        pos = end + 2;
        return true;
    };
    std::string head;
    if (!line(head) || head.empty() || head[0] != '*')
        return false;
    int n = std::stoi(head.substr(1));
    for (int i = 0; i < n; ++i) {
        std::string len_line;
        if (!line(len_line) || len_line.empty() || len_line[0] != '$')
            return false;
        auto len = std::stoul(len_line.substr(1));
        if (buf.size() < pos + len + 2)
            return false;
        out.push_back(buf.substr(pos, len));
        pos += len + 2;
    }
    buf.erase(0, pos);
    return true;
}

} // namespace

void fake_redis::serve(int fd, int connection)
{
    std::string buf;
    char chunk[4096];
    while (!stopping_) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 20) <= 0)
            continue;
        auto n = ::read(fd, chunk, sizeof chunk);
        if (n <= 0)
            break;
        buf.append(chunk, static_cast<std::size_t>(n));
        std::vector<std::string> command;
        while (parse_command(buf, command)) {
            {
                std::lock_guard lock(mutex_);
                commands_.push_back(command);
            }
            auto reply = answer_(command, connection);
            if (reply == resp_close) {
                ::close(fd);
                return;
            }
            if (!reply.empty() && ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0)
                break;
        }
    }
    ::close(fd);
}

} // namespace idemgate::test
