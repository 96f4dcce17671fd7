// SPDX-License-Identifier: Apache-2.0
// The service manager's readiness protocol through the real binary: a NOTIFY_SOCKET this test
// owns (an AF_UNIX datagram socket, as systemd gives a Type=notify unit) receives READY=1 once
// the listeners and the store answer, WATCHDOG=1 every half WATCHDOG_USEC, RELOADING=1 (with
// MONOTONIC_USEC) and READY=1 around a SIGHUP reload, and STOPPING=1 when the drain begins.
#include "gateway_fixture.hpp"

#include <csignal>
#include <doctest/doctest.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

using namespace idemgate::test;

namespace {

// The socket a service manager listens on; each datagram is one sd_notify() call.
class notify_socket {
public:
    notify_socket() : path_(dir_.path() + "/notify")
    {
        fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        REQUIRE(fd_ >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        REQUIRE(path_.size() < sizeof addr.sun_path);
        std::copy(path_.begin(), path_.end(), addr.sun_path);
        REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    }
    ~notify_socket() { ::close(fd_); }
    notify_socket(const notify_socket&) = delete;
    notify_socket& operator=(const notify_socket&) = delete;

    const std::string& path() const { return path_; }

    // The next datagram that contains `line` (others are kept in seen()); nullopt on timeout.
    std::optional<std::string> wait_for(const std::string& line, std::chrono::milliseconds timeout)
    {
        auto deadline = std::chrono::steady_clock::now() + timeout;
        for (;;) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0)
                return std::nullopt;
            pollfd p{fd_, POLLIN, 0};
            if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
                continue;
            char buf[4096];
            auto n = ::recv(fd_, buf, sizeof buf, 0);
            if (n <= 0)
                continue;
            std::string message(buf, static_cast<std::size_t>(n));
            seen_.push_back(message);
            if (("\n" + message + "\n").find("\n" + line + "\n") != std::string::npos)
                return message;
        }
    }
    const std::vector<std::string>& seen() const { return seen_; }

private:
    temp_dir dir_;
    std::string path_;
    int fd_ = -1;
    std::vector<std::string> seen_;
};

} // namespace

TEST_SUITE_BEGIN("service manager");

TEST_CASE("sd_notify: ready after the store, watchdog, reloading and ready around SIGHUP, stopping at drain")
{
    notify_socket manager;
    gateway_options options;
    options.env = {{"NOTIFY_SOCKET", manager.path()}, {"WATCHDOG_USEC", "200000"}};
    gateway_fixture f(options);

    auto ready = manager.wait_for("READY=1", 10s);
    REQUIRE_MESSAGE(ready.has_value(), f.process().output());
    CHECK(ready->find("STATUS=serving") != std::string::npos);
    // Ready means the store answers: guarded requests can be served.
    CHECK(http_request(f.gateway->admin_port(), "GET", "/readyz", {}, {}, 2s).status == 200);
    auto first =
        http_request(f.port(), "POST", "/api/orders", {{"Idempotency-Key", unique_key("notify")}}, "{}");
    CHECK(first.status == 201);

    // The watchdog: every 100 ms while the I/O threads run what is posted to them.
    auto watchdog_start = std::chrono::steady_clock::now();
    REQUIRE(manager.wait_for("WATCHDOG=1", 2s));
    REQUIRE(manager.wait_for("WATCHDOG=1", 2s));
    REQUIRE(manager.wait_for("WATCHDOG=1", 2s));
    CHECK(std::chrono::steady_clock::now() - watchdog_start < 1500ms);

    // A reload: RELOADING=1 with the monotonic time, then READY=1 again.
    f.process().signal(SIGHUP);
    auto reloading = manager.wait_for("RELOADING=1", 5s);
    REQUIRE_MESSAGE(reloading.has_value(), f.process().output());
    CHECK(reloading->find("MONOTONIC_USEC=") != std::string::npos);
    CHECK(manager.wait_for("READY=1", 5s).has_value());

    // The drain: STOPPING=1, then a clean exit.
    f.process().signal(SIGTERM);
    auto stopping = manager.wait_for("STOPPING=1", 5s);
    REQUIRE_MESSAGE(stopping.has_value(), f.process().output());
    CHECK(f.process().wait_exit(10s) == 0);
}

TEST_CASE("without NOTIFY_SOCKET the gateway runs as before")
{
    gateway_fixture f;
    auto answer =
        http_request(f.port(), "POST", "/api/orders", {{"Idempotency-Key", unique_key("no-notify")}}, "{}");
    CHECK(answer.status == 201);
    f.process().signal(SIGTERM);
    CHECK(f.process().wait_exit(10s) == 0);
}

TEST_SUITE_END();

TEST_SUITE_BEGIN("process metrics");

TEST_CASE("/metrics carries the process families and idemgate_build_info")
{
    gateway_fixture f;
    // Some CPU and file descriptors to count: a few requests over fresh connections.
    for (int i = 0; i < 20; ++i)
        http_request(f.port(), "POST", "/api/orders", {{"Idempotency-Key", unique_key("proc")}}, "{}");
    auto text = http_request(f.gateway->admin_port(), "GET", "/metrics").body;
    for (const char* family :
         {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
          "process_start_time_seconds", "process_open_fds", "process_max_fds"})
        CHECK_MESSAGE(text.find(std::string("\n# TYPE ") + family + " ") != std::string::npos, family);
    auto rss = metric(f.gateway->admin_port(), "process_resident_memory_bytes");
    CHECK(rss > 1 << 20);   // a running gateway holds more than a MiB
    CHECK(rss < 1LL << 34); // and not 16 GiB: the page size was applied once
    auto fds = metric(f.gateway->admin_port(), "process_open_fds");
    CHECK(fds >= 4); // the listeners, the admin listener, the epoll instances
    CHECK(fds < metric(f.gateway->admin_port(), "process_max_fds"));
    auto started = metric(f.gateway->admin_port(), "process_start_time_seconds");
    auto now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    CHECK(started <= now + 1);
    CHECK(started > now - 600); // started by this test, moments ago
    CHECK(metric(f.gateway->admin_port(), "process_cpu_seconds_total") >= 0);
    auto info = text.find("\nidemgate_build_info{version=\"");
    REQUIRE(info != std::string::npos);
    auto line = text.substr(info + 1, text.find('\n', info + 1) - info - 1);
    CHECK(line.find(",commit=\"") != std::string::npos);
    CHECK(line.find(",io_backend=\"") != std::string::npos);
    CHECK(line.ends_with("} 1"));
}

TEST_CASE("request latency by outcome and upstream latency by upstream, buckets to 60 s")
{
    gateway_fixture f;
    auto key = unique_key("latency");
    for (int i = 0; i < 3; ++i)
        http_request(f.port(), "POST", "/api/orders", {{"Idempotency-Key", key}},
                     "{}"); // 1 executed, 2 replayed
    auto admin = f.gateway->admin_port();
    // The gateway counts a request after writing its answer: wait (bounded) for the last one.
    auto deadline = std::chrono::steady_clock::now() + 2s;
    while (metric(admin, "idemgate_request_duration_seconds_count{outcome=\"replayed\"}") < 2 &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(10ms);
    CHECK(metric(admin, "idemgate_request_duration_seconds_count{outcome=\"executed\"}") == 1);
    CHECK(metric(admin, "idemgate_request_duration_seconds_count{outcome=\"replayed\"}") == 2);
    auto upstream = metric(admin, "idemgate_upstream_duration_seconds_count{upstream=\"orders\"}");
    CHECK(upstream == 1); // the replays never reached it
    CHECK(metric(admin, "idemgate_upstream_duration_seconds_bucket{upstream=\"orders\",le=\"60\"}") == 1);
    CHECK(metric(admin, "idemgate_upstream_duration_seconds_bucket{upstream=\"orders\",le=\"+Inf\"}") == 1);
}

TEST_SUITE_END();
