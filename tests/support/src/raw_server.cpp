// SPDX-License-Identifier: Apache-2.0
// The raw TCP server the scripted upstreams of the gateway tests stand on.
#include "idemgate/test/raw_server.hpp"

#include "idemgate/test/harness.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <stdexcept>
#include <sys/socket.h>
#include <unistd.h>
#include <utility>

namespace idemgate::test {

raw_server::raw_server(const char* who, int backlog, handler serve, int receive_buffer)
    : who_(who), serve_(std::move(serve))
{
    auto listener = listen_on_loopback(who, backlog, receive_buffer);
    listen_fd_ = listener.fd;
    port_ = listener.port;
    acceptor_ = std::thread([this] { accept_loop(); });
}

raw_server::~raw_server()
{
    stopping_ = true;
    // Shutting a listening socket down makes a blocked accept() fail (Linux).
    ::shutdown(listen_fd_, SHUT_RDWR);
    acceptor_.join();
    ::close(listen_fd_);
    std::vector<std::thread> threads;
    {
        std::lock_guard lock(mutex_);
        for (int fd : fds_)
            ::shutdown(fd, SHUT_RDWR); // a handler blocked in recv() reads EOF
        threads.swap(threads_);
    }
    for (auto& t : threads)
        t.join();
    for (int fd : fds_)
        ::close(fd);
}

int raw_server::connection(int number)
{
    std::lock_guard lock(mutex_);
    if (number < 1 || static_cast<std::size_t>(number) > fds_.size())
        throw std::runtime_error(who_ + ": no connection " + std::to_string(number) + " (" +
                                 std::to_string(fds_.size()) + " accepted)");
    return fds_[static_cast<std::size_t>(number - 1)];
}

void raw_server::accept_loop()
{
    while (!stopping_) {
        const int fd = ::accept(listen_fd_, nullptr, nullptr);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            return;
        }
        std::lock_guard lock(mutex_);
        fds_.push_back(fd);
        const int number = static_cast<int>(fds_.size());
        threads_.emplace_back([this, fd, number] {
            serve_(fd, number);
            ::shutdown(fd, SHUT_RDWR);
        });
    }
}

namespace {

bool receive_into(int fd, std::string& buffer)
{
    char chunk[4096];
    const auto got = ::recv(fd, chunk, sizeof chunk, 0);
    if (got <= 0)
        return false;
    buffer.append(chunk, static_cast<std::size_t>(got));
    return true;
}

} // namespace

std::optional<std::string> raw_server::read_request(int fd, std::string& buffer)
{
    std::size_t head_end;
    while ((head_end = buffer.find("\r\n\r\n")) == std::string::npos)
        if (!receive_into(fd, buffer))
            return std::nullopt;
    std::string head = buffer.substr(0, head_end);
    std::string lower = head;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    std::size_t length = 0;
    if (auto at = lower.find("\r\ncontent-length:"); at != std::string::npos)
        length = std::stoul(head.substr(at + 17));
    while (buffer.size() < head_end + 4 + length)
        if (!receive_into(fd, buffer))
            return std::nullopt;
    buffer.erase(0, head_end + 4 + length);
    return head;
}

} // namespace idemgate::test
