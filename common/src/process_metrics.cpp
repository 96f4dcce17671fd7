// SPDX-License-Identifier: Apache-2.0
// The standard process_* families (the names Prometheus' client libraries use), from /proc/self.
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <idemgate/common/prometheus.hpp>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace idemgate::prometheus {

namespace {

std::string read_small_file(const char* path)
{
    std::string text;
    if (std::FILE* f = std::fopen(path, "r")) {
        char buf[4096];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
            text.append(buf, n);
        std::fclose(f);
    }
    return text;
}

// The system's boot time (seconds since the epoch), from the btime line of /proc/stat.
double boot_time()
{
    auto text = read_small_file("/proc/stat");
    auto at = text.find("\nbtime ");
    return at == std::string::npos ? -1 : std::strtod(text.c_str() + at + 7, nullptr);
}

void one(std::string& out, std::string_view name, std::string_view type, std::string_view help, double value)
{
    header(out, name, type, help);
    sample(out, name, "", value);
}

} // namespace

void process_metrics(std::string& out)
{
    const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
    const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
    // /proc/self/stat: the fields after the command name (which may hold spaces) in ")".
    auto stat = read_small_file("/proc/self/stat");
    auto close = stat.rfind(')');
    if (close != std::string::npos && ticks > 0) {
        // Field 3 (state) is the first after ")"; utime, stime are 14 and 15, starttime 22,
        // vsize 23, rss 24 (proc(5)).
        const char* p = stat.c_str() + close + 1;
        double field[25] = {};
        for (int i = 3; i <= 24 && *p; ++i) {
            while (*p == ' ')
                ++p;
            char* end = nullptr;
            field[i] = std::strtod(p, &end);
            if (end == p) // the state letter
                while (*p && *p != ' ')
                    ++p;
            else
                p = end;
        }
        one(out, "process_cpu_seconds_total", "counter", "User and system CPU time spent in seconds.",
            (field[14] + field[15]) / ticks);
        one(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
            field[24] * page);
        one(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", field[23]);
        if (double boot = boot_time(); boot >= 0)
            one(out, "process_start_time_seconds", "gauge",
                "Start time of the process since unix epoch in seconds.", boot + field[22] / ticks);
    }
    if (DIR* dir = ::opendir("/proc/self/fd")) {
        double fds = 0;
        while (const dirent* e = ::readdir(dir))
            if (e->d_name[0] != '.')
                ++fds;
        ::closedir(dir);
        one(out, "process_open_fds", "gauge", "Number of open file descriptors.",
            fds - 1); // minus the DIR's own
    }
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0)
        one(out, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
            static_cast<double>(limit.rlim_cur));
}

} // namespace idemgate::prometheus
