// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/access_log_writer.hpp>

namespace idemgate::gateway {

access_log_writer::access_log_writer(options opts, std::atomic<std::uint64_t>& dropped, sink_type sink)
    : queue_lines_(opts.queue_lines), batch_bytes_(opts.batch_bytes),
      flush_interval_ms_(opts.flush_interval.count()), dropped_(dropped), sink_(std::move(sink))
{
    if (!sink_)
        sink_ = [](std::string_view lines) { log::write_raw_lines(lines); };
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
    std::lock_guard lock(sink_mutex_);
    sink_(b.text);
    written_.fetch_add(b.lines, std::memory_order_relaxed);
}

void access_log_writer::run()
{
    std::deque<batch> taken;
    std::unique_lock lock(mutex_);
    for (;;) {
        wake_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty())
            break; // stopping, and nothing left
        taken.swap(queue_);
        queued_lines_ = 0;
        queued_log_lines_ = 0;
        lock.unlock();
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
