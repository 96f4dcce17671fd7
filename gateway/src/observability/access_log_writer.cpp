// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/access_log_writer.hpp>
#include <sys/stat.h>
#include <system_error>
#include <unistd.h>
#include <utility>

namespace idemgate::gateway {

namespace {

// The path opened for append; a file it creates is 0640 whatever the umask (the unit's is 0077),
// so that a log shipper in the file's group can read it. -1 with errno set on failure.
int open_for_append(const std::string& path)
{
    for (int attempt = 0; attempt < 2; ++attempt) {
        int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
        if (fd >= 0) {
            ::fchmod(fd, 0640);
            return fd;
        }
        if (errno != EEXIST)
            return -1;
        fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd >= 0 || errno != ENOENT)
            return fd;
        // Removed between the two calls: create it.
    }
    return -1;
}

} // namespace

access_log_file::access_log_file(std::string path) : path_(std::move(path)), fd_(open_for_append(path_))
{
    if (fd_ < 0)
        throw std::system_error(errno, std::generic_category(), "access_log.path " + path_);
}

access_log_file::~access_log_file()
{
    ::close(fd_);
}

int access_log_file::write(std::string_view lines) noexcept
{
    while (!lines.empty()) {
        auto n = ::write(fd_, lines.data(), lines.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        lines.remove_prefix(static_cast<std::size_t>(n));
    }
    return 0;
}

int access_log_file::reopen() noexcept
{
    int fd = open_for_append(path_);
    if (fd < 0)
        return errno;
    ::close(fd_);
    fd_ = fd;
    return 0;
}

// ---------------------------------------------------------------------------------------------

access_log_writer::access_log_writer(options opts, std::atomic<std::uint64_t>& dropped, sink_type sink)
    : queue_lines_(opts.queue_lines), batch_bytes_(opts.batch_bytes),
      flush_interval_ms_(opts.flush_interval.count()), dropped_(dropped), sink_(std::move(sink))
{
    if (!sink_)
        sink_ = [](std::string_view lines) { log::write_raw_lines(lines); };
    thread_ = std::thread([this] { run(); });
}

access_log_writer::access_log_writer(options opts, std::atomic<std::uint64_t>& dropped,
                                     std::unique_ptr<access_log_file> file)
    : queue_lines_(opts.queue_lines), batch_bytes_(opts.batch_bytes),
      flush_interval_ms_(opts.flush_interval.count()), dropped_(dropped), file_(std::move(file))
{
    thread_ = std::thread([this] { run(); });
}

void access_log_writer::apply(const options& opts) noexcept
{
    queue_lines_.store(opts.queue_lines, std::memory_order_relaxed);
    batch_bytes_.store(opts.batch_bytes, std::memory_order_relaxed);
    flush_interval_ms_.store(opts.flush_interval.count(), std::memory_order_relaxed);
}

access_log_writer::~access_log_writer()
{
    stop();
}

bool access_log_writer::submit(std::string&& text, std::size_t lines)
{
    if (lines == 0)
        return true;
    std::unique_lock lock(mutex_);
    if (stopped_) {
        lock.unlock();
        write(batch{std::move(text), lines});
        return true;
    }
    if (!queue_.empty() && queued_lines_ + lines > queue_lines_.load(std::memory_order_relaxed)) {
        lock.unlock();
        dropped_.fetch_add(lines, std::memory_order_relaxed);
        return false;
    }
    queue_.push_back(batch{std::move(text), lines});
    queued_lines_ += lines;
    lock.unlock();
    wake_.notify_one();
    return true;
}

void access_log_writer::capture_log_lines(std::atomic<std::uint64_t>& dropped) noexcept
{
    {
        std::lock_guard lock(mutex_);
        log_dropped_ = &dropped;
    }
    log::set_line_sink(this);
}

void access_log_writer::take(std::string&& line) noexcept
{
    std::unique_lock lock(mutex_);
    if (stopping_) {
        lock.unlock();
        write(batch{std::move(line), 0});
        return;
    }
    if (queued_log_lines_ >= max_log_lines) {
        lock.unlock();
        log_dropped_->fetch_add(1, std::memory_order_relaxed);
        return;
    }
    queue_.push_back(batch{std::move(line), 0});
    ++queued_log_lines_;
    lock.unlock();
    wake_.notify_one();
}

void access_log_writer::write(const batch& b)
{
    int failed = 0;
    {
        std::lock_guard lock(sink_mutex_);
        if (b.lines == 0)
            log::write_raw_lines(b.text); // a log line: stdout, wherever the access lines go
        else if (file_)
            failed = file_->write(b.text);
        else
            sink_(b.text);
        written_.fetch_add(b.lines, std::memory_order_relaxed);
    }
    // Logged outside the sink's lock: the line may come back through this writer.
    if (failed)
        log::coalesced(log::level::error, "access log write failed", "access_log",
                       {{"path", file_->path()}, {"error", std::strerror(failed)}});
}

bool access_log_writer::reopen()
{
    if (!file_)
        return false;
    {
        std::lock_guard lock(mutex_);
        reopen_ = true;
    }
    wake_.notify_one();
    return true;
}

void access_log_writer::reopen_file()
{
    int failed = 0;
    {
        std::lock_guard lock(sink_mutex_);
        failed = file_->reopen();
    }
    if (failed)
        log::error("access log not reopened: still writing to the file it had open",
                   {{"path", file_->path()}, {"error", std::strerror(failed)}});
    else
        log::info("access log reopened", {{"path", file_->path()}});
}

void access_log_writer::run()
{
    std::deque<batch> taken;
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || reopen_ || !queue_.empty(); });
        const bool reopen = std::exchange(reopen_, false);
        if (queue_.empty() && !reopen)
            break; // stopping, and nothing left
        taken.swap(queue_);
        queued_lines_ = 0;
        queued_log_lines_ = 0;
        lock.unlock();
        // Between two batches, i.e. between two whole lines.
        if (reopen)
            reopen_file();
        for (const auto& b : taken)
            write(b);
        taken.clear();
        lock.lock();
    }
}

void access_log_writer::stop()
{
    std::vector<access_log_buffer*> buffers;
    {
        std::lock_guard lock(mutex_);
        if (stopping_)
            return;
        buffers = buffers_;
        if (log_dropped_)
            log::set_line_sink(nullptr);
    }
    // The appending threads have ended: their buffers are ours to hand over.
    for (auto* b : buffers)
        b->flush();
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable())
        thread_.join();
    std::lock_guard lock(mutex_);
    stopped_ = true;
}

void access_log_writer::enrol(access_log_buffer* buffer)
{
    std::lock_guard lock(mutex_);
    buffers_.push_back(buffer);
}

void access_log_writer::leave(access_log_buffer* buffer)
{
    std::lock_guard lock(mutex_);
    buffers_.erase(std::remove(buffers_.begin(), buffers_.end(), buffer), buffers_.end());
}

// ---------------------------------------------------------------------------------------------

access_log_buffer::access_log_buffer(access_log_writer& writer, boost::asio::any_io_executor ex)
    : writer_(writer), timer_(std::move(ex)), self_(std::make_shared<access_log_buffer*>(this))
{
    pending_.reserve(writer_.settings().batch_bytes + 1024);
    writer_.enrol(this);
}

access_log_buffer::~access_log_buffer()
{
    *self_ = nullptr;
    flush();
    writer_.leave(this);
}

void access_log_buffer::append(std::string_view line)
{
    pending_.append(line);
    pending_.push_back('\n');
    ++lines_;
    if (pending_.size() >= writer_.settings().batch_bytes) {
        flush();
        return;
    }
    if (!timer_armed_) {
        timer_armed_ = true;
        timer_.expires_after(writer_.settings().flush_interval);
        timer_.async_wait([self = self_](const boost::system::error_code&) {
            if (auto* buffer = *self) {
                buffer->timer_armed_ = false;
                buffer->flush();
            }
        });
    }
}

void access_log_buffer::flush()
{
    if (lines_ == 0)
        return;
    std::string batch;
    batch.reserve(writer_.settings().batch_bytes + 1024);
    batch.swap(pending_);
    auto lines = lines_;
    lines_ = 0;
    writer_.submit(std::move(batch), lines);
}

} // namespace idemgate::gateway
