// SPDX-License-Identifier: Apache-2.0
#include <atomic>
#include <boost/json/serialize.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <idemgate/common/log.hpp>
#include <mutex>
#include <string>
#include <unistd.h>
#include <unordered_map>

namespace idemgate::log {

namespace {

std::atomic<line_sink*> current_sink{nullptr};
std::atomic<int> lowest_level{static_cast<int>(level::info)};

void write_now(const std::string& line)
{
    // One fwrite per line: stdio locks the stream, so lines from threads never interleave.
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fflush(stdout);
}

void hand_over(std::string&& line)
{
    if (auto* sink = current_sink.load(std::memory_order_acquire))
        sink->take(std::move(line));
    else
        write_now(line);
}

} // namespace

void set_line_sink(line_sink* sink) noexcept
{
    current_sink.store(sink, std::memory_order_release);
}

void set_level(level lowest) noexcept
{
    lowest_level.store(static_cast<int>(lowest), std::memory_order_relaxed);
}

bool enabled(level lvl) noexcept
{
    return static_cast<int>(lvl) >= lowest_level.load(std::memory_order_relaxed);
}

long long now_unix_ms() noexcept
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

static const char* level_name(level lvl)
{
    switch (lvl) {
    case level::debug: return "debug";
    case level::info: return "info";
    case level::warn: return "warn";
    case level::error: return "error";
    }
    return "info";
}

namespace {

void write_line(level lvl, std::string_view msg, boost::json::object fields)
{
    boost::json::object line;
    line["ts"] = now_unix_ms();
    line["level"] = level_name(lvl);
    line["msg"] = msg;
    for (auto& kv : fields)
        line[kv.key()] = std::move(kv.value());
    std::string out = boost::json::serialize(line);
    out.push_back('\n');
    hand_over(std::move(out));
}

} // namespace

void write(level lvl, std::string_view msg, boost::json::object fields)
{
    if (enabled(lvl))
        write_line(lvl, msg, std::move(fields));
}

void lifecycle(std::string_view msg, boost::json::object fields)
{
    write_line(level::info, msg, std::move(fields));
}

void coalesced(level lvl, std::string_view msg, std::string_view group, boost::json::object fields,
               long long window_ms)
{
    if (!enabled(lvl))
        return;
    struct last_line {
        std::string msg;
        long long written_ms = 0;
        std::uint64_t left_out = 0;
    };
    static std::mutex mutex;
    static std::unordered_map<std::string, last_line> groups;
    auto now = now_unix_ms();
    std::uint64_t left_out = 0;
    bool same_msg = false;
    {
        std::lock_guard lock(mutex);
        if (groups.size() > 1024)
            groups.clear(); // many distinct groups: coalescing matters less than bounded memory
        auto& last = groups[std::string(group)];
        same_msg = last.msg == msg;
        if (same_msg && now - last.written_ms < window_ms) {
            ++last.left_out;
            return;
        }
        left_out = last.left_out;
        last.msg = msg;
        last.written_ms = now;
        last.left_out = 0;
    }
    if (left_out)
        fields[same_msg ? "repeated" : "previous_repeated"] = left_out;
    write(lvl, msg, std::move(fields));
}

void write_raw_line(std::string_view json_object)
{
    std::string out;
    out.reserve(json_object.size() + 1);
    out.append(json_object);
    out.push_back('\n');
    hand_over(std::move(out));
}

void write_raw_lines(std::string_view lines)
{
    // One write(2) for the whole block rather than stdio's buffer-sized pieces, under stdout's
    // lock, so the other log lines (fwrite + fflush under the same lock) never land inside it.
    flockfile(stdout);
    std::fflush(stdout);
    int fd = fileno(stdout);
    while (!lines.empty()) {
        auto n = ::write(fd, lines.data(), lines.size());
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; // stdout is gone: nothing sensible to do with a log line
        lines.remove_prefix(static_cast<std::size_t>(n));
    }
    funlockfile(stdout);
}

} // namespace idemgate::log
