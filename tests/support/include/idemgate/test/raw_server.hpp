// SPDX-License-Identifier: Apache-2.0
#pragma once
// A raw TCP server on 127.0.0.1 for the upstreams tests script byte by byte (answers no real HTTP
// server can be made to send, or a test that must know which connection a request arrived on).
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace idemgate::test {

// Listens on 127.0.0.1 (listen_on_loopback) and accepts on a thread of its own; each connection is
// served by `serve(fd, number)` on a thread of its own, `number` counting connections 1, 2, ... in
// the order accepted. When `serve` returns, its connection is shut down (the peer reads EOF); the
// descriptor stays open until the server stops, so a number a test holds never names another
// socket. Stopping (the destructor) unblocks the accept and every blocked read, joins every thread
// and closes every descriptor.
//
// `serve` runs until the server stops, so what it touches must outlive the server: a class that
// holds one declares it as its last member (destroyed first).
class raw_server {
public:
    using handler = std::function<void(int fd, int number)>;

    // `backlog` and `receive_buffer` as for listen_on_loopback; `who` names the server in its errors.
    raw_server(const char* who, int backlog, handler serve, int receive_buffer = 0);
    ~raw_server();
    raw_server(const raw_server&) = delete;
    raw_server& operator=(const raw_server&) = delete;

    std::uint16_t port() const { return port_; }
    // The descriptor of connection `number` (from 1); throws std::runtime_error when there is none.
    int connection(int number);

    // Reads one request on `fd` (a head, then a body of its Content-Length) with what is already in
    // `buffer`; returns the head (request line and fields, without the blank line) and leaves in
    // `buffer` what came after the body. Nothing at end of file or on an error.
    static std::optional<std::string> read_request(int fd, std::string& buffer);

private:
    void accept_loop();

    std::string who_;
    handler serve_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::mutex mutex_;
    std::vector<int> fds_; // connection n is fds_[n - 1]
    std::vector<std::thread> threads_;
    std::thread acceptor_;
};

} // namespace idemgate::test
