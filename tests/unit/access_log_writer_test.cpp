// SPDX-License-Identifier: Apache-2.0
#include <atomic>
#include <boost/asio/io_context.hpp>
#include <condition_variable>
#include <doctest/doctest.h>
#include <idemgate/gateway/access_log_writer.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using namespace idemgate::gateway;
using namespace std::chrono_literals;

namespace {

// "t<thread>-<i>" (built with += : GCC 12 warns falsely about operator+ chains, -Wrestrict)
std::string line_of(int thread, int i)
{
    std::string out = "t";
    out += std::to_string(thread);
    out += '-';
    out += std::to_string(i);
    return out;
}

// A sink that records every batch and can be held shut (a stdout nobody reads).
struct test_sink {
    std::mutex mutex;
    std::condition_variable cv;
    bool blocked = false;
    bool entered = false; // the writer is inside a write
    std::vector<std::string> batches;

    access_log_writer::sink_type fn()
    {
        return [this](std::string_view text) {
            std::unique_lock lock(mutex);
            entered = true;
            cv.notify_all();
            cv.wait(lock, [this] { return !blocked; });
            batches.emplace_back(text);
            cv.notify_all();
        };
    }
    void block()
    {
        std::lock_guard lock(mutex);
        blocked = true;
    }
    void unblock()
    {
        std::lock_guard lock(mutex);
        blocked = false;
        cv.notify_all();
    }
    bool wait_entered()
    {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, 5s, [this] { return entered; });
    }
    bool wait_batches(std::size_t n)
    {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, 5s, [&] { return batches.size() >= n; });
    }
    std::size_t lines()
    {
        std::lock_guard lock(mutex);
        std::size_t n = 0;
        for (auto& b : batches)
            for (char c : b)
                n += c == '\n';
        return n;
    }
    std::string all()
    {
        std::lock_guard lock(mutex);
        std::string out;
        for (auto& b : batches)
            out += b;
        return out;
    }
};

} // namespace

TEST_CASE("access log writer: each batch is one write, in order, and stop writes everything")
{
    test_sink sink;
    std::atomic<std::uint64_t> dropped{0};
    access_log_writer writer({}, dropped, sink.fn());
    CHECK(writer.submit("a\nb\n", 2));
    CHECK(writer.submit("c\n", 1));
    writer.stop();
    CHECK(sink.all() == "a\nb\nc\n");
    CHECK(sink.batches.size() == 2);
    CHECK(writer.written() == 3);
    CHECK(dropped == 0);
    // After stop, a late batch is written by the caller rather than lost.
    CHECK(writer.submit("d\n", 1));
    CHECK(sink.all() == "a\nb\nc\nd\n");
}

TEST_CASE("access log writer: a full queue drops whole batches and counts their lines")
{
    test_sink sink;
    std::atomic<std::uint64_t> dropped{0};
    access_log_writer::options opts;
    opts.queue_lines = 3;
    access_log_writer writer(opts, dropped, sink.fn());
    sink.block();
    REQUIRE(writer.submit("first\n", 1)); // taken by the writer, which then hangs in the sink
    REQUIRE(sink.wait_entered());
    CHECK(writer.submit("q1\nq2\n", 2));   // queued: 2 of 3
    CHECK(writer.submit("q3\n", 1));       // queued: 3 of 3
    CHECK_FALSE(writer.submit("x1\n", 1)); // over the bound: dropped, not blocked
    CHECK_FALSE(writer.submit("x2\nx3\n", 2));
    CHECK(dropped == 3);
    sink.unblock();
    writer.stop();
    CHECK(sink.all() == "first\nq1\nq2\nq3\n");
    CHECK(writer.written() == 4);
    CHECK(dropped == 3);
}

TEST_CASE("access log writer: an empty queue takes a batch larger than queue_lines")
{
    test_sink sink;
    std::atomic<std::uint64_t> dropped{0};
    access_log_writer::options opts;
    opts.queue_lines = 1;
    access_log_writer writer(opts, dropped, sink.fn());
    CHECK(writer.submit("a\nb\nc\n", 3));
    writer.stop();
    CHECK(sink.lines() == 3);
    CHECK(dropped == 0);
}

TEST_CASE("access log buffer: lines are batched by size, by time, and handed over at stop")
{
    test_sink sink;
    std::atomic<std::uint64_t> dropped{0};
    access_log_writer::options opts;
    opts.batch_bytes = 10;
    opts.flush_interval = 20ms;
    access_log_writer writer(opts, dropped, sink.fn());
    boost::asio::io_context ioc;
    {
        access_log_buffer buffer(writer, ioc.get_executor());
        buffer.append("12345"); // 6 bytes with the newline: held
        CHECK(sink.lines() == 0);
        buffer.append("67890"); // 12 bytes: handed over as one batch
        REQUIRE(sink.wait_batches(1));
        CHECK(sink.batches[0] == "12345\n67890\n");

        buffer.append("late"); // held until the timer fires on the thread's io_context
        ioc.run_for(200ms);
        REQUIRE(sink.wait_batches(2));
        CHECK(sink.batches[1] == "late\n");

        buffer.append("at stop"); // the thread has "stopped": stop() takes the pending line
        writer.stop();
        CHECK(sink.all() == "12345\n67890\nlate\nat stop\n");
    }
    CHECK(writer.written() == 4);
}

TEST_CASE("access log buffers on several threads: every line arrives once, none dropped")
{
    test_sink sink;
    std::atomic<std::uint64_t> dropped{0};
    access_log_writer::options opts;
    opts.batch_bytes = 256;
    access_log_writer writer(opts, dropped, sink.fn());
    constexpr int threads = 4;
    constexpr int per_thread = 5000;
    std::vector<std::unique_ptr<boost::asio::io_context>> contexts;
    std::vector<std::unique_ptr<access_log_buffer>> buffers;
    for (int t = 0; t < threads; ++t) {
        contexts.push_back(std::make_unique<boost::asio::io_context>());
        buffers.push_back(std::make_unique<access_log_buffer>(writer, contexts.back()->get_executor()));
    }
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i)
                buffers[static_cast<std::size_t>(t)]->append(line_of(t, i));
            contexts[static_cast<std::size_t>(t)]->run_for(10ms);
        });
    for (auto& th : pool)
        th.join();
    writer.stop();
    CHECK(dropped == 0);
    CHECK(sink.lines() == threads * per_thread);
    CHECK(writer.written() == threads * per_thread);
    auto text = sink.all();
    // Each thread's lines keep their order.
    for (int t = 0; t < threads; ++t) {
        std::size_t pos = 0;
        for (int i = 0; i < per_thread; i += 997) {
            auto at = text.find(line_of(t, i) + '\n', pos);
            REQUIRE(at != std::string::npos);
            pos = at;
        }
    }
    buffers.clear();
}
