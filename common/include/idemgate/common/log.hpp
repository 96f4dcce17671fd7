#pragma once
// One JSON object per line on stdout (structured logs and the access log).
#include <boost/json/object.hpp>
#include <string_view>

namespace idemgate::log {

enum class level { debug, info, warn, error };

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

// Writes an already serialized JSON object as one line (the access log's fast path).
void write_raw_line(std::string_view json_object);

// Writes complete, newline-terminated lines as one block (the access log writer's batches):
// one write(2) (more only if the kernel takes part of it) under stdout's stdio lock, so no other
// line lands inside the block.
void write_raw_lines(std::string_view lines);

// Milliseconds since the Unix epoch, for "ts" fields and record timestamps.
long long now_unix_ms() noexcept;

} // namespace idemgate::log
