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

// Milliseconds since the Unix epoch, for "ts" fields and record timestamps.
long long now_unix_ms() noexcept;

} // namespace idemgate::log
