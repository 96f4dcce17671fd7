// SPDX-License-Identifier: Apache-2.0
#pragma once
// Helpers for the Redis store tests: an I/O thread to run sessions on, bounded waits, and a
// fake Redis for the faults a real one cannot show (late replies, garbage).
#include <atomic>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <chrono>
#include <functional>
#include <future>
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <idemgate/test/harness.hpp>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace idemgate::test {

// One io_context on its own thread, like one gateway I/O thread.
class io_thread {
public:
    io_thread();
    ~io_thread();
    io_thread(const io_thread&) = delete;
    io_thread& operator=(const io_thread&) = delete;

    boost::asio::io_context& context() { return ioc_; }
    boost::asio::any_io_executor executor() { return ioc_.get_executor(); }

    // Runs the coroutine `make()` returns on this thread and waits (bounded) for its result.
    template<class F>
    auto run(F make, std::chrono::milliseconds timeout = std::chrono::seconds(10))
    {
        auto fut = boost::asio::co_spawn(ioc_, std::move(make), boost::asio::use_future);
        if (fut.wait_for(timeout) != std::future_status::ready)
            throw std::runtime_error("coroutine did not finish in time");
        return fut.get();
    }

    // Stops accepting new work and waits (bounded) for every coroutine to end; false if some
    // did not (they are then stopped by force).
    bool finish(std::chrono::milliseconds timeout = std::chrono::seconds(5));

private:
    boost::asio::io_context ioc_;
    boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
    std::atomic<bool> done_{false};
    std::thread thread_;
};

// Polls `pred` every few milliseconds until it holds or `timeout` passes.
bool eventually(const std::function<bool()>& pred,
                std::chrono::milliseconds timeout = std::chrono::seconds(10));

// A redis_config for a server on 127.0.0.1:port with test-friendly timeouts.
config::redis_config redis_config_for(std::uint16_t port);

// The real idemgate binary over Redis (gateway_redis_test, redis_tls_test):
// its /readyz status, 0 when it does not answer within 1 s;
int readyz(const gateway_process& gw);
// a gateway started on `yaml` that answered /readyz 200 (the test fails otherwise);
std::unique_ptr<gateway_process> start_gateway(const std::string& yaml);
// POST /api/orders with Idempotency-Key `key` and a JSON body;
http_response post(const gateway_process& gw, const std::string& key, const std::string& body,
                   std::vector<std::pair<std::string, std::string>> headers = {});
// an idempotency key unique to this process and call.
std::string unique_key(const std::string& stem);

// A 64-char lower-case hex fingerprint derived from `seed`.
std::string fingerprint_of(const std::string& seed);

// An in-flight record owned by `token`.
store::record in_flight_record(const std::string& token,
                               const std::string& fingerprint = fingerprint_of("fp"));

// A completed record owned by `token` with the given body.
store::record completed_record(const std::string& token, const std::string& body,
                               const std::string& fingerprint = fingerprint_of("fp"));

// A fake Redis server on 127.0.0.1 (free port), one thread per connection. `answer` gets the
// command (bulk strings) and the 0-based connection number and returns the raw reply bytes;
// it may block (that is how a slow server is faked), and resp_close drops the connection.
class fake_redis {
public:
    using answer_fn = std::function<std::string(const std::vector<std::string>& command, int connection)>;
    explicit fake_redis(answer_fn answer);
    ~fake_redis();
    fake_redis(const fake_redis&) = delete;
    fake_redis& operator=(const fake_redis&) = delete;

    std::uint16_t port() const { return port_; }
    int connections() const { return connections_.load(); }
    // Every command received so far, in order.
    std::vector<std::vector<std::string>> commands() const;

private:
    void accept_loop();
    void serve(int fd, int connection);

    answer_fn answer_;
    int listen_fd_ = -1;
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::atomic<int> connections_{0};
    mutable std::mutex mutex_;
    std::vector<std::vector<std::string>> commands_;
    std::vector<std::thread> threads_;
    std::thread acceptor_;
};

// RESP encodings for fake replies.
std::string resp_bulk(const std::string& s);
inline const std::string resp_nil = "$-1\r\n";
inline const std::string resp_ok = "+OK\r\n";
// Not a reply: fake_redis closes the connection instead of answering.
inline const std::string resp_close = std::string("\0close", 6);
inline const std::string resp_noeviction = "*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n";

} // namespace idemgate::test
