// SPDX-License-Identifier: Apache-2.0
#pragma once
// The access log's write path: each I/O thread formats its lines into its own
// batch buffer (no lock per line); a full or old batch is handed to one background writer thread
// through a bounded queue (one mutex acquisition per batch); the writer does one write per batch.
// A full queue drops the batch and counts its lines instead of blocking a request thread.
// The lines go to stdout or to a file (access_log.path) that reopen() opens again after a rotation.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <idemgate/common/log.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace idemgate::gateway {

class access_log_buffer;

// The access log's file (access_log.path): opened for append, a new file created with mode 0640
// whatever the umask. Used by the writer thread only.
class access_log_file {
public:
    // Throws std::system_error naming the path when it cannot be opened.
    explicit access_log_file(std::string path);
    ~access_log_file();
    access_log_file(const access_log_file&) = delete;
    access_log_file& operator=(const access_log_file&) = delete;

    // Writes complete lines as one block (more write(2) calls only if the kernel takes part of
    // it); a failed write loses the block and is returned.
    int write(std::string_view lines) noexcept;
    // Opens the path again (logrotate renamed the file: a new one is created) and closes the old
    // descriptor; on failure (returned as errno) the old file stays in use.
    int reopen() noexcept;
    const std::string& path() const noexcept { return path_; }

private:
    std::string path_;
    int fd_ = -1;
};

// One process-wide writer thread over a bounded queue of batches.
class access_log_writer : private log::line_sink {
public:
    struct options {
        // Lines waiting in the queue at most; a batch that would pass it is dropped (a batch is
        // always accepted into an empty queue, so one batch may exceed it).
        std::size_t queue_lines = 65536;
        std::size_t batch_bytes = 64 * 1024;           // a thread's buffer is handed over at this size
        std::chrono::milliseconds flush_interval{100}; // ... or this long after its first line
    };
    // Receives one batch of complete, newline-terminated access lines per call, on the writer
    // thread. The other log lines (capture_log_lines) always go to stdout.
    using sink_type = std::function<void(std::string_view)>;

    // Starts the writer thread. `dropped` counts lines dropped because the queue was full.
    // The default sink writes to stdout (log::write_raw_lines).
    access_log_writer(options opts, std::atomic<std::uint64_t>& dropped, sink_type sink = {});
    // The same, writing the access lines to `file`.
    access_log_writer(options opts, std::atomic<std::uint64_t>& dropped,
                      std::unique_ptr<access_log_file> file);
    ~access_log_writer();
    access_log_writer(const access_log_writer&) = delete;
    access_log_writer& operator=(const access_log_writer&) = delete;

    // The batching settings in force (any thread).
    options settings() const noexcept
    {
        return {queue_lines_.load(std::memory_order_relaxed), batch_bytes_.load(std::memory_order_relaxed),
                std::chrono::milliseconds(flush_interval_ms_.load(std::memory_order_relaxed))};
    }
    // New batching settings (a configuration reload): the next line, batch and flush use them.
    void apply(const options& opts) noexcept;

    // Queues a batch of `lines` lines; false when the queue is full (the lines are counted as
    // dropped). After stop(), the batch is written at once by the calling thread.
    bool submit(std::string&& batch, std::size_t lines);

    // From now until stop(), the process's other log lines (log::write) go through this writer's
    // queue too, in order with the access lines: a stuck stdout then blocks no thread. At most
    // max_log_lines of them wait; more are dropped and counted in `dropped`.
    void capture_log_lines(std::atomic<std::uint64_t>& dropped) noexcept;
    static constexpr std::size_t max_log_lines = 4096;

    // Hands over every registered buffer's lines, writes everything queued and joins the
    // writer thread. Call only once the threads that append to the buffers have stopped (the
    // drain's end): no line of a clean stop is lost. Idempotent.
    void stop();

    // With a file: the writer thread opens its path again before its next batch, so every line
    // lands whole in the old file or the new one (logrotate: rename, then SIGUSR1). False (nothing
    // to reopen) when the lines go to stdout. Any thread.
    bool reopen();
    // The file's path; "" when the lines go to the sink (stdout).
    std::string_view file_path() const noexcept
    {
        return file_ ? std::string_view(file_->path()) : std::string_view();
    }

    // Lines written to the sink so far.
    std::uint64_t written() const noexcept { return written_.load(std::memory_order_relaxed); }

private:
    friend class access_log_buffer;
    struct batch {
        std::string text;
        std::size_t lines = 0; // access lines; 0 for a log line
    };

    void take(std::string&& line) noexcept override;
    void run();
    void write(const batch& b);
    void reopen_file();
    void enrol(access_log_buffer* buffer);
    void leave(access_log_buffer* buffer);

    std::atomic<std::size_t> queue_lines_;
    std::atomic<std::size_t> batch_bytes_;
    std::atomic<std::int64_t> flush_interval_ms_;
    std::atomic<std::uint64_t>& dropped_;
    std::atomic<std::uint64_t> written_{0};
    sink_type sink_;
    std::unique_ptr<access_log_file> file_; // set: the access lines go here, not to sink_
    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<batch> queue_;
    std::size_t queued_lines_ = 0;
    std::size_t queued_log_lines_ = 0;
    std::atomic<std::uint64_t>* log_dropped_ = nullptr;
    bool stopping_ = false;
    bool stopped_ = false;
    bool reopen_ = false;                     // asked for by reopen(), done by the writer thread
    std::vector<access_log_buffer*> buffers_; // registered buffers, for stop()
    std::mutex sink_mutex_;                   // the writer thread vs. writes after stop()
    std::thread thread_;
};

// One I/O thread's batch buffer. Used only from that thread (and from stop() once it ended).
class access_log_buffer {
public:
    // `ex` is the thread's executor, for the flush timer.
    access_log_buffer(access_log_writer& writer, boost::asio::any_io_executor ex);
    ~access_log_buffer();
    access_log_buffer(const access_log_buffer&) = delete;
    access_log_buffer& operator=(const access_log_buffer&) = delete;

    // Appends one line (a newline is added). Hands the batch over when it reached batch_bytes;
    // otherwise a timer hands it over flush_interval after its first line.
    void append(std::string_view line);
    // Hands over whatever is pending now.
    void flush();

private:
    access_log_writer& writer_;
    std::string pending_;
    std::size_t lines_ = 0;
    boost::asio::steady_timer timer_;
    bool timer_armed_ = false;
    // The timer's handler can outlive the buffer (queued in a stopped io_context): it holds
    // this and finds nullptr once the buffer is gone.
    std::shared_ptr<access_log_buffer*> self_;
};

} // namespace idemgate::gateway
