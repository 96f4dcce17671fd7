// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <charconv>
#include <climits>
#include <cstdint>
#include <fstream>
#include <idemgate/common/cpu_quota.hpp>
#include <optional>
#include <sched.h>
#include <sstream>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

namespace idemgate {
namespace {

namespace fs = std::filesystem;

// An absolute path as /proc spells it (a mount point, a cgroup path) placed under `root`.
fs::path under_root(const fs::path& root, const fs::path& absolute)
{
    return root / absolute.relative_path();
}

std::optional<std::string> read_small_file(const fs::path& path)
{
    std::ifstream in(path);
    if (!in)
        return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad())
        return std::nullopt;
    return std::move(text).str();
}

// The non-empty pieces of `text` between any of `separators`.
std::vector<std::string_view> split_fields(std::string_view text, std::string_view separators = " \t\n")
{
    std::vector<std::string_view> fields;
    std::size_t start = text.find_first_not_of(separators);
    while (start != std::string_view::npos) {
        std::size_t end = text.find_first_of(separators, start);
        fields.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
        start = end == std::string_view::npos ? end : text.find_first_not_of(separators, end);
    }
    return fields;
}

std::optional<std::int64_t> parse_integer(std::string_view text)
{
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

// CPUs a quota of `quota` µs of CPU time per `period` µs allows, rounded up (1.5 CPUs -> 2: the
// last thread is throttled part of the time, which costs less than an idle core). Not positive on
// either side means no limit ("-1" in v1, and garbage).
std::optional<unsigned> cpus_of_quota(std::int64_t quota, std::int64_t period)
{
    if (quota <= 0 || period <= 0)
        return std::nullopt;
    std::int64_t cpus = quota / period + (quota % period != 0 ? 1 : 0);
    return static_cast<unsigned>(std::min<std::int64_t>(cpus, UINT_MAX));
}

// cgroup v2: cpu.max holds "max <period>" (no limit) or "<quota> <period>".
std::optional<unsigned> read_cpu_max(const fs::path& dir)
{
    auto text = read_small_file(dir / "cpu.max");
    if (!text)
        return std::nullopt;
    auto fields = split_fields(*text);
    if (fields.size() != 2 || fields[0] == "max")
        return std::nullopt;
    auto quota = parse_integer(fields[0]);
    auto period = parse_integer(fields[1]);
    if (!quota || !period)
        return std::nullopt;
    return cpus_of_quota(*quota, *period);
}

// cgroup v1 CFS bandwidth control: cpu.cfs_quota_us ("-1" = no limit) per cpu.cfs_period_us.
std::optional<unsigned> read_cfs_quota(const fs::path& dir)
{
    auto quota_text = read_small_file(dir / "cpu.cfs_quota_us");
    auto period_text = read_small_file(dir / "cpu.cfs_period_us");
    if (!quota_text || !period_text)
        return std::nullopt;
    auto quota_fields = split_fields(*quota_text);
    auto period_fields = split_fields(*period_text);
    if (quota_fields.size() != 1 || period_fields.size() != 1)
        return std::nullopt;
    auto quota = parse_integer(quota_fields[0]);
    auto period = parse_integer(period_fields[0]);
    if (!quota || !period)
        return std::nullopt;
    return cpus_of_quota(*quota, *period);
}

// mountinfo escapes space, tab, newline and backslash in paths as \ooo.
std::string unescape_mount_path(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    auto octal = [](char c) { return c >= '0' && c <= '7'; };
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\\' && i + 3 < text.size() && octal(text[i + 1]) && octal(text[i + 2]) &&
            octal(text[i + 3])) {
            out.push_back(
                static_cast<char>((text[i + 1] - '0') * 64 + (text[i + 2] - '0') * 8 + (text[i + 3] - '0')));
            i += 3;
            continue;
        }
        out.push_back(text[i]);
    }
    return out;
}

struct cgroup_mount {
    fs::path mount_point; // where it is mounted, absolute as /proc spells it
    fs::path mount_root;  // which cgroup of the hierarchy appears at mount_point ("/" usually)
};

struct cgroup_mounts {
    std::vector<cgroup_mount> v2;
    std::vector<cgroup_mount> v1_cpu;
};

bool has_controller(std::string_view list, std::string_view controller)
{
    for (auto name : split_fields(list, ","))
        if (name == controller)
            return true;
    return false;
}

// /proc/self/mountinfo lines: "id parent major:minor root mount_point options [optional...] - fstype
// source super_options". Without it (or without cgroup lines), the usual places are assumed.
cgroup_mounts find_cgroup_mounts(const fs::path& root)
{
    cgroup_mounts mounts;
    if (auto text = read_small_file(under_root(root, "/proc/self/mountinfo"))) {
        for (auto line : split_fields(*text, "\n")) {
            auto fields = split_fields(line);
            auto dash = std::find(fields.begin(), fields.end(), std::string_view("-"));
            if (fields.size() < 5 || dash == fields.end() || fields.end() - dash < 4)
                continue;
            std::string_view fstype = dash[1];
            std::string_view super_options = dash[3];
            cgroup_mount m{unescape_mount_path(fields[4]), unescape_mount_path(fields[3])};
            if (fstype == "cgroup2")
                mounts.v2.push_back(std::move(m));
            else if (fstype == "cgroup" && has_controller(super_options, "cpu"))
                mounts.v1_cpu.push_back(std::move(m));
        }
    }
    if (mounts.v2.empty())
        mounts.v2.push_back({"/sys/fs/cgroup", "/"});
    if (mounts.v1_cpu.empty()) {
        mounts.v1_cpu.push_back({"/sys/fs/cgroup/cpu,cpuacct", "/"});
        mounts.v1_cpu.push_back({"/sys/fs/cgroup/cpu", "/"});
    }
    return mounts;
}

struct process_cgroups {
    std::optional<std::string> v2;     // "0::<path>"
    std::optional<std::string> v1_cpu; // "<id>:<controllers with cpu>:<path>"
};

process_cgroups find_process_cgroups(const fs::path& root)
{
    process_cgroups groups;
    auto text = read_small_file(under_root(root, "/proc/self/cgroup"));
    if (!text)
        return groups;
    for (auto line : split_fields(*text, "\n")) {
        auto first = line.find(':');
        auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos)
            continue;
        auto id = line.substr(0, first);
        auto controllers = line.substr(first + 1, second - first - 1);
        auto path = std::string(line.substr(second + 1));
        if (path.empty() || path.front() != '/')
            continue;
        if (id == "0" && controllers.empty())
            groups.v2 = path;
        else if (has_controller(controllers, "cpu"))
            groups.v1_cpu = path;
    }
    return groups;
}

// The directory of cgroup `path` under a mount of its hierarchy. When the path is not below the
// mount's root (a container that sees only its own cgroup bind-mounted, or a cgroup namespace
// mismatch) or its directory does not exist, the mount point itself is the closest we can see.
fs::path cgroup_dir(const fs::path& root, const cgroup_mount& mount, const std::string& path)
{
    fs::path mount_point = under_root(root, mount.mount_point);
    fs::path relative = fs::path(path).lexically_relative(mount.mount_root);
    if (relative.empty() || relative == "." || *relative.begin() == "..")
        return mount_point;
    fs::path dir = mount_point / relative;
    std::error_code ec;
    return fs::is_directory(dir, ec) ? dir : mount_point;
}

// The smallest quota on `dir` and each ancestor up to `top`: a parent's limit caps its children.
template<class ReadQuota>
std::optional<unsigned> smallest_quota_up_to(fs::path dir, const fs::path& top, ReadQuota read_quota)
{
    std::optional<unsigned> smallest;
    for (int depth = 0; depth < 64; ++depth) {
        if (auto cpus = read_quota(dir))
            smallest = smallest ? std::min(*smallest, *cpus) : *cpus;
        if (dir == top || !dir.has_relative_path() || dir.parent_path() == dir)
            break;
        dir = dir.parent_path();
    }
    return smallest;
}

template<class ReadQuota>
std::optional<unsigned> quota_of(const fs::path& root, const std::vector<cgroup_mount>& mounts,
                                 const std::optional<std::string>& path, ReadQuota read_quota)
{
    std::optional<unsigned> smallest;
    for (const auto& mount : mounts) {
        fs::path top = under_root(root, mount.mount_point);
        std::error_code ec;
        if (!fs::is_directory(top, ec))
            continue;
        fs::path dir = path ? cgroup_dir(root, mount, *path) : top;
        if (auto cpus = smallest_quota_up_to(dir, top, read_quota))
            smallest = smallest ? std::min(*smallest, *cpus) : *cpus;
    }
    return smallest;
}

unsigned affinity_cpus()
{
    // A fixed cpu_set_t covers 1024 CPUs; beyond that sched_getaffinity fails with EINVAL and the
    // host's count is the best we know.
    cpu_set_t set;
    CPU_ZERO(&set);
    if (::sched_getaffinity(0, sizeof set, &set) == 0) {
        int count = CPU_COUNT(&set);
        if (count > 0)
            return static_cast<unsigned>(count);
    }
    return std::thread::hardware_concurrency();
}

} // namespace

unsigned available_cpus(const std::filesystem::path& root, unsigned hardware)
{
    std::optional<unsigned> cpus;
    if (hardware > 0)
        cpus = hardware;
    auto take = [&](std::optional<unsigned> limit) {
        if (limit)
            cpus = cpus ? std::min(*cpus, *limit) : *limit;
    };
    auto mounts = find_cgroup_mounts(root);
    auto groups = find_process_cgroups(root);
    take(quota_of(root, mounts.v2, groups.v2, read_cpu_max));
    take(quota_of(root, mounts.v1_cpu, groups.v1_cpu, read_cfs_quota));
    return std::max(1u, cpus.value_or(1));
}

unsigned available_cpus()
{
    return available_cpus("/", affinity_cpus());
}

} // namespace idemgate
