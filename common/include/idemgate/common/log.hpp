// SPDX-License-Identifier: Apache-2.0
#pragma once
// One JSON object per line on stdout (structured logs and the access log).
#include <boost/json/object.hpp>
#include <string>
#include <string_view>

namespace idemgate::log {

enum class level { debug, info, warn, error };

// Lines below `lowest` are not written (default info). Any thread; takes effect at once.
void set_level(level lowest) noexcept;
bool enabled(level lvl) noexcept;

// Writes {"ts":..., "level":..., "msg":..., <fields>} as one line, atomically w.r.t. other lines.
void write(level lvl, std::string_view msg, boost::json::object fields = {});

inline void info(std::string_view msg, boost::json::object fields = {})
{
    write(level::info, msg, std::move(fields));
}
inline void warn(std::string_view msg, boost::json::object fields = {})
{
    write(level::warn, msg, std::move(fields));
}
inline void error(std::string_view msg, boost::json::object fields = {})
{
    write(level::error, msg, std::move(fields));
}

// An info line written whatever the level: the process's lifecycle (listening, reloaded,
// draining, stopped), which operators and supervisors wait for.
void lifecycle(std::string_view msg, boost::json::object fields = {});

// Like write(), but within one `group` (e.g. a Redis address) a line whose `msg` repeats the
// group's last written line less than `window` after it is only counted: an outage seen by every
// connection or request logs one line. The next line written for the group carries the count:
// "repeated" (same message) or "previous_repeated" (the state changed, e.g. lost -> reconnected).
void coalesced(level lvl, std::string_view msg, std::string_view group, boost::json::object fields,
               long long window_ms = 10000);

// Writes an already serialized JSON object as one line (the access log's fast path).
void write_raw_line(std::string_view json_object);

// Writes complete, newline-terminated lines as one block (the access log writer's batches):
// one write(2) (more only if the kernel takes part of it) under stdout's stdio lock, so no other
// line lands inside the block.
void write_raw_lines(std::string_view lines);

// Takes over the log lines while a writer thread owns stdout (the access log's writer), so that a
// stuck stdout (a full pipe nobody reads) never blocks the thread that logs. `line` is one
// complete, newline-terminated line.
class line_sink {
public:
    virtual void take(std::string&& line) noexcept = 0;

protected:
    ~line_sink() = default;
};

// Routes write() and write_raw_line() to `sink` from now on; nullptr writes them at once again.
void set_line_sink(line_sink* sink) noexcept;

// Milliseconds since the Unix epoch, for "ts" fields and record timestamps.
long long now_unix_ms() noexcept;

} // namespace idemgate::log
