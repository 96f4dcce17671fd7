// SPDX-License-Identifier: Apache-2.0
// Process-level pieces of the harness: binaries, ports, temp dirs and captured child processes.
#include "idemgate/test/harness.hpp"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace idemgate::test {

std::string bin_dir()
{
    return IDEMGATE_BIN_DIR;
}

std::string gateway_bin()
{
    const char* chosen = std::getenv("IDEMGATE_TEST_GATEWAY");
    return chosen && *chosen ? chosen : bin_dir() + "/idemgate";
}

std::uint16_t free_port()
{
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error("free_port: socket() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(fd);
        throw std::runtime_error("free_port: bind/getsockname failed");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
}

loopback_listener listen_on_loopback(const char* who, int backlog, int receive_buffer)
{
    loopback_listener out;
    out.fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (out.fd < 0)
        throw std::runtime_error(std::string(who) + ": socket() failed");
    if (receive_buffer != 0)
        ::setsockopt(out.fd, SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof receive_buffer);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(out.fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(out.fd, backlog) != 0 ||
        ::getsockname(out.fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        ::close(out.fd);
        throw std::runtime_error(std::string(who) + ": cannot listen on 127.0.0.1");
    }
    out.port = ntohs(addr.sin_port);
    return out;
}

// ---------------------------------------------------------------------------------------------

temp_dir::temp_dir()
{
    std::string pattern = (std::filesystem::temp_directory_path() / "idemgate-test-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr)
        throw std::runtime_error("temp_dir: mkdtemp failed: " + std::string(std::strerror(errno)));
    path_ = pattern;
}

temp_dir::~temp_dir()
{
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
}

std::string temp_dir::write_file(const std::string& name, const std::string& content) const
{
    std::string full = path_ + "/" + name;
    std::ofstream out(full, std::ios::binary | std::ios::trunc);
    out << content;
    out.close();
    if (!out)
        throw std::runtime_error("temp_dir: cannot write " + full);
    return full;
}

// ---------------------------------------------------------------------------------------------

struct child_process::impl {
    int read_fd = -1;
    std::thread reader;
    std::atomic<bool> stop{false};
    std::atomic<bool> paused{false};
    mutable std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::string> lines;
    bool eof = false;
    bool reaped = false;
    int exit_status = -1;
    bool echo = std::getenv("IDEMGATE_TEST_VERBOSE") != nullptr;
    std::string name;

    void read_loop()
    {
        std::string partial;
        char buf[4096];
        while (!stop.load()) {
            if (paused.load()) {
                std::this_thread::sleep_for(5ms); // not reading is the point; bounded by stop
                continue;
            }
            pollfd pfd{read_fd, POLLIN, 0};
            int r = ::poll(&pfd, 1, 100);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                continue;
            ssize_t n = ::read(read_fd, buf, sizeof(buf));
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            partial.append(buf, static_cast<std::size_t>(n));
            std::size_t pos;
            while ((pos = partial.find('\n')) != std::string::npos) {
                push(partial.substr(0, pos));
                partial.erase(0, pos + 1);
            }
        }
        if (!partial.empty())
            push(partial);
        std::lock_guard lock(mutex);
        eof = true;
        cv.notify_all();
    }

    void push(std::string line)
    {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (echo)
            std::cerr << "[" << name << "] " << line << "\n";
        std::lock_guard lock(mutex);
        lines.push_back(std::move(line));
        cv.notify_all();
    }
};

child_process::child_process(std::string program, std::vector<std::string> args,
                             std::vector<std::pair<std::string, std::string>> extra_env)
    : impl_(std::make_unique<impl>())
{
    impl_->name = std::filesystem::path(program).filename().string();

    // Everything the child needs is built before fork: only async-signal-safe calls after it.
    std::vector<std::string> argv_storage;
    argv_storage.push_back(program);
    for (auto& a : args)
        argv_storage.push_back(a);
    std::vector<char*> argv;
    for (auto& a : argv_storage)
        argv.push_back(a.data());
    argv.push_back(nullptr);

    std::vector<std::string> env_storage;
    for (char** e = environ; e && *e; ++e) {
        std::string entry = *e;
        std::string key = entry.substr(0, entry.find('='));
        bool overridden = false;
        for (auto& [k, v] : extra_env)
            overridden = overridden || k == key;
        if (!overridden)
            env_storage.push_back(entry);
    }
    for (auto& [k, v] : extra_env)
        env_storage.push_back(k + "=" + v);
    std::vector<char*> envp;
    for (auto& e : env_storage)
        envp.push_back(e.data());
    envp.push_back(nullptr);

    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
        throw std::runtime_error("child_process: pipe2 failed");
    pid_t parent = ::getpid();
    pid_t pid = ::fork();
    if (pid < 0) {
        ::close(fds[0]);
        ::close(fds[1]);
        throw std::runtime_error("child_process: fork failed");
    }
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent)
            ::_exit(127);
        ::dup2(fds[1], STDOUT_FILENO);
        ::dup2(fds[1], STDERR_FILENO);
        int devnull = ::open("/dev/null", O_RDONLY);
        if (devnull >= 0)
            ::dup2(devnull, STDIN_FILENO);
        ::execvpe(argv[0], argv.data(), envp.data());
        const char msg[] = "child_process: exec failed\n";
        [[maybe_unused]] auto w = ::write(STDERR_FILENO, msg, sizeof(msg) - 1);
        ::_exit(127);
    }
    ::close(fds[1]);
    pid_ = pid;
    impl_->read_fd = fds[0];
    impl_->reader = std::thread([p = impl_.get()] { p->read_loop(); });
}

child_process::~child_process()
{
    if (!impl_)
        return;
    if (!impl_->reaped && pid_ > 0) {
        ::kill(-pid_, SIGKILL);
        ::kill(pid_, SIGKILL);
        int status = 0;
        while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
        }
        impl_->reaped = true;
    }
    // The pipe reaches EOF once the child (and its process group) is gone; the stop flag
    // bounds the wait if a grandchild escaped the group and still holds the write end.
    {
        std::unique_lock lock(impl_->mutex);
        impl_->cv.wait_for(lock, 2s, [&] { return impl_->eof; });
    }
    impl_->stop = true;
    if (impl_->reader.joinable())
        impl_->reader.join();
    ::close(impl_->read_fd);
}

std::optional<std::string> child_process::wait_for_line(const std::function<bool(const std::string&)>& pred,
                                                        milliseconds timeout)
{
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::unique_lock lock(impl_->mutex);
    std::size_t checked = 0;
    for (;;) {
        for (; checked < impl_->lines.size(); ++checked)
            if (pred(impl_->lines[checked]))
                return impl_->lines[checked];
        if (impl_->eof)
            return std::nullopt;
        if (impl_->cv.wait_until(lock, deadline) == std::cv_status::timeout) {
            for (; checked < impl_->lines.size(); ++checked)
                if (pred(impl_->lines[checked]))
                    return impl_->lines[checked];
            return std::nullopt;
        }
    }
}

std::string child_process::output() const
{
    std::string out;
    for (const auto& line : lines())
        out += "  " + line + "\n";
    return out;
}

std::vector<std::string> child_process::lines() const
{
    std::lock_guard lock(impl_->mutex);
    return impl_->lines;
}

void child_process::pause_output(bool paused)
{
    impl_->paused = paused;
}

void child_process::signal(int sig)
{
    if (!impl_->reaped && pid_ > 0)
        ::kill(pid_, sig);
}

std::optional<int> child_process::wait_exit(milliseconds timeout)
{
    if (impl_->reaped)
        return impl_->exit_status;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        int status = 0;
        pid_t r = ::waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            impl_->reaped = true;
            impl_->exit_status = WIFEXITED(status)     ? WEXITSTATUS(status)
                                 : WIFSIGNALED(status) ? 128 + WTERMSIG(status)
                                                       : -1;
            // Let the reader drain what the child wrote before it exited.
            std::unique_lock lock(impl_->mutex);
            impl_->cv.wait_for(lock, 2s, [&] { return impl_->eof; });
            return impl_->exit_status;
        }
        if (r < 0 && errno != EINTR)
            return std::nullopt;
        if (std::chrono::steady_clock::now() >= deadline)
            return std::nullopt;
        // Polling waitpid: there is no portable blocking wait with a timeout for one child.
        std::this_thread::sleep_for(5ms);
    }
}

bool child_process::running()
{
    if (impl_->reaped)
        return false;
    return !wait_exit(0ms).has_value();
}

} // namespace idemgate::test
