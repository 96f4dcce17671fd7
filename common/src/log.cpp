#include <boost/json/serialize.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <idemgate/common/log.hpp>
#include <string>
#include <unistd.h>

namespace idemgate::log {

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

void write(level lvl, std::string_view msg, boost::json::object fields)
{
    boost::json::object line;
    line["ts"] = now_unix_ms();
    line["level"] = level_name(lvl);
    line["msg"] = msg;
    for (auto& kv : fields)
        line[kv.key()] = std::move(kv.value());
    write_raw_line(boost::json::serialize(line));
}

void write_raw_line(std::string_view json_object)
{
    std::string out;
    out.reserve(json_object.size() + 1);
    out.append(json_object);
    out.push_back('\n');
    // One fwrite per line: stdio locks the stream, so lines from threads never interleave.
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
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
