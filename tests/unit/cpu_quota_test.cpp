// SPDX-License-Identifier: Apache-2.0
#include <atomic>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <idemgate/common/cpu_quota.hpp>
#include <string>
#include <thread>
#include <unistd.h>

using idemgate::available_cpus;
namespace fs = std::filesystem;

namespace {

// A fake file-system root (proc/self/..., sys/fs/cgroup/...) in the temp dir, removed at scope exit.
struct fake_root {
    fs::path path;

    fake_root()
    {
        static std::atomic<int> counter{0};
        path = fs::temp_directory_path() /
               ("idemgate_cpu_quota_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~fake_root()
    {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    fake_root(const fake_root&) = delete;
    fake_root& operator=(const fake_root&) = delete;

    // Writes `text` to <root>/<relative>, creating the directories on the way.
    void write(const std::string& relative, const std::string& text) const
    {
        fs::path file = path / relative;
        fs::create_directories(file.parent_path());
        std::ofstream(file) << text;
    }
    void mkdir(const std::string& relative) const { fs::create_directories(path / relative); }
};

// A cgroup v2 host: the unified hierarchy at /sys/fs/cgroup, the process in `cgroup`.
void cgroup_v2(const fake_root& root, const std::string& cgroup)
{
    root.write("proc/self/cgroup", "0::" + cgroup + "\n");
    root.write("proc/self/mountinfo",
               "22 1 0:20 / /sys rw,nosuid - sysfs sysfs rw\n"
               "30 22 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec - cgroup2 cgroup2 rw,nsdelegate\n");
    root.mkdir("sys/fs/cgroup" + cgroup);
}

// A cgroup v1 host with cpu,cpuacct mounted at /sys/fs/cgroup/cpu,cpuacct.
void cgroup_v1(const fake_root& root, const std::string& cgroup)
{
    root.write("proc/self/cgroup",
               "12:memory:" + cgroup + "\n4:cpu,cpuacct:" + cgroup + "\n1:name=systemd:/\n");
    root.write("proc/self/mountinfo",
               "25 22 0:22 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
               "31 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
               "32 25 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n");
    root.mkdir("sys/fs/cgroup/cpu,cpuacct" + cgroup);
}

} // namespace

TEST_CASE("a cgroup v2 cpu.max quota caps the CPU count, rounded up")
{
    fake_root root;
    cgroup_v2(root, "/system.slice/idemgate.service");
    root.write("sys/fs/cgroup/system.slice/idemgate.service/cpu.max", "150000 100000\n");
    CHECK(available_cpus(root.path, 8) == 2);
}

TEST_CASE("cgroup v2 cpu.max of max leaves the affinity count")
{
    fake_root root;
    cgroup_v2(root, "/system.slice/idemgate.service");
    root.write("sys/fs/cgroup/system.slice/idemgate.service/cpu.max", "max 100000\n");
    CHECK(available_cpus(root.path, 8) == 8);
}

TEST_CASE("a quota on a parent cgroup caps its children")
{
    fake_root root;
    cgroup_v2(root, "/kubepods.slice/pod1/container1");
    root.write("sys/fs/cgroup/kubepods.slice/pod1/container1/cpu.max", "max 100000\n");
    root.write("sys/fs/cgroup/kubepods.slice/pod1/cpu.max", "300000 100000\n");
    root.write("sys/fs/cgroup/kubepods.slice/cpu.max", "max 100000\n");
    CHECK(available_cpus(root.path, 16) == 3);
}

TEST_CASE("a container with its own cgroup namespace reads cpu.max at the mount point")
{
    // docker --cpus=2 on a cgroup v2 host: /proc/self/cgroup says "0::/" and no mountinfo is needed.
    fake_root root;
    root.write("proc/self/cgroup", "0::/\n");
    root.write("sys/fs/cgroup/cpu.max", "200000 100000\n");
    CHECK(available_cpus(root.path, 64) == 2);
}

TEST_CASE("a cgroup v1 CFS quota caps the CPU count, rounded up")
{
    fake_root root;
    cgroup_v1(root, "/docker/abc");
    root.write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "250000\n");
    root.write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    CHECK(available_cpus(root.path, 8) == 3);
}

TEST_CASE("a cgroup v1 CFS quota of -1 leaves the affinity count")
{
    fake_root root;
    cgroup_v1(root, "/docker/abc");
    root.write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "-1\n");
    root.write("sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    CHECK(available_cpus(root.path, 8) == 8);
}

TEST_CASE("a cgroup v1 container that sees only its own cgroup reads the quota at the mount point")
{
    // Docker without a cgroup namespace: /proc/self/cgroup names /docker/<id>, but the cpu
    // hierarchy is bind-mounted from that cgroup, so its files sit at the mount point itself.
    fake_root root;
    root.write("proc/self/cgroup", "4:cpu,cpuacct:/docker/abc\n");
    root.write("proc/self/mountinfo", "32 25 0:29 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro,nosuid - cgroup "
                                      "cgroup rw,cpu,cpuacct\n");
    root.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "400000\n");
    root.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
    CHECK(available_cpus(root.path, 32) == 4);
}

TEST_CASE("a mount point with an escaped space in mountinfo is found")
{
    fake_root root;
    root.write("proc/self/cgroup", "0::/app\n");
    root.write("proc/self/mountinfo", "30 22 0:26 / /cgroup\\040root rw - cgroup2 cgroup2 rw\n");
    root.write("cgroup root/app/cpu.max", "100000 100000\n");
    CHECK(available_cpus(root.path, 8) == 1);
}

TEST_CASE("the smaller of the cgroup quota and the affinity count wins")
{
    fake_root root;
    cgroup_v2(root, "/app");
    root.write("sys/fs/cgroup/app/cpu.max", "800000 100000\n");
    CHECK(available_cpus(root.path, 2) == 2);
    CHECK(available_cpus(root.path, 12) == 8);
}

TEST_CASE("a quota below one CPU still gives one thread")
{
    fake_root root;
    cgroup_v2(root, "/app");
    root.write("sys/fs/cgroup/app/cpu.max", "20000 100000\n");
    CHECK(available_cpus(root.path, 8) == 1);
}

TEST_CASE("missing cgroup files leave the affinity count, and never less than one")
{
    fake_root root;
    CHECK(available_cpus(root.path, 6) == 6);
    CHECK(available_cpus(root.path, 0) == 1);

    fake_root no_cpu_max;
    cgroup_v2(no_cpu_max, "/app"); // the cpu controller is not enabled: no cpu.max anywhere
    CHECK(available_cpus(no_cpu_max.path, 4) == 4);

    fake_root v1_without_period;
    cgroup_v1(v1_without_period, "/app");
    v1_without_period.write("sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us", "100000\n");
    CHECK(available_cpus(v1_without_period.path, 4) == 4);
}

TEST_CASE("an unknown affinity count with a quota gives the quota")
{
    fake_root root;
    cgroup_v2(root, "/app");
    root.write("sys/fs/cgroup/app/cpu.max", "300000 100000\n");
    CHECK(available_cpus(root.path, 0) == 3);
}

TEST_CASE("garbage in cgroup files is ignored, not trusted")
{
    for (const char* text :
         {"", "lots\n", "100000\n", "-5 100000\n", "100000 0\n", "100000 -1\n", "1e5 100000\n",
          "100000 100000 100000\n", "0x10 100000\n", "99999999999999999999999 100000\n"}) {
        CAPTURE(text);
        fake_root root;
        cgroup_v2(root, "/app");
        root.write("sys/fs/cgroup/app/cpu.max", text);
        CHECK(available_cpus(root.path, 4) == 4);
    }
    for (const char* text : {"", "x\n", "0\n", "1 2\n", "-100000\n"}) {
        CAPTURE(text);
        fake_root root;
        cgroup_v1(root, "/app");
        root.write("sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_quota_us", text);
        root.write("sys/fs/cgroup/cpu,cpuacct/app/cpu.cfs_period_us", "100000\n");
        CHECK(available_cpus(root.path, 4) == 4);
    }
    fake_root bad_proc;
    bad_proc.write("proc/self/cgroup", "no colons here\n0:\n::relative\n");
    bad_proc.write("proc/self/mountinfo", "garbage\n1 2 3\n- - -\n");
    CHECK(available_cpus(bad_proc.path, 4) == 4);
}

TEST_CASE("available_cpus on this machine is between one and the hardware count")
{
    unsigned cpus = available_cpus();
    CHECK(cpus >= 1);
    if (unsigned hardware = std::thread::hardware_concurrency(); hardware > 0)
        CHECK(cpus <= hardware);
}
