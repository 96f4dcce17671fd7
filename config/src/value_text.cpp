// SPDX-License-Identifier: Apache-2.0
// The value spellings of --print-config (keys.hpp).
#include "keys.hpp"

#include <charconv>

namespace idemgate::config::detail {

// The largest unit that divides exactly: 86400000 -> "1d", 1500 -> "1500ms".
std::string duration_text(duration d)
{
    auto ms = d.count();
    struct unit {
        long long ms;
        const char* name;
    };
    static constexpr unit units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
    if (ms == 0)
        return "0s";
    for (const auto& u : units)
        if (ms % u.ms == 0)
            return std::to_string(ms / u.ms) + u.name;
    return std::to_string(ms) + "ms";
}

std::string size_text(std::size_t n)
{
    struct unit {
        std::size_t bytes;
        const char* name;
    };
    static constexpr unit units[] = {{1ULL << 30, "GiB"}, {1ULL << 20, "MiB"}, {1ULL << 10, "KiB"}};
    if (n == 0)
        return "0";
    for (const auto& u : units)
        if (n % u.bytes == 0)
            return std::to_string(n / u.bytes) + u.name;
    return std::to_string(n) + "B";
}

// host:port, an IPv6 literal in brackets (as the loader reads it).
std::string endpoint_text(const endpoint& e)
{
    if (e.host.find(':') != std::string::npos)
        return "[" + e.host + "]:" + std::to_string(e.port);
    return e.to_string();
}

// The shortest fixed-point text that reads back as `v` (the loader takes no exponents).
std::string number_text(double v)
{
    char buf[400];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    return ec == std::errc{} ? std::string(buf, end) : std::string("0");
}

void emit(YAML::Emitter& out, const std::string& v)
{
    out << v;
}

void emit(YAML::Emitter& out, unsigned v)
{
    out << v;
}

void emit(YAML::Emitter& out, const endpoint& v)
{
    out << endpoint_text(v);
}

} // namespace idemgate::config::detail
