// SPDX-License-Identifier: Apache-2.0
#pragma once
// How many CPUs this process may really use: in a container, std::thread::hardware_concurrency()
// reports the host's cores while the cgroup CPU quota (docker --cpus, Kubernetes limits.cpu) allows
// fewer; running more I/O threads than that only adds throttling.
#include <filesystem>

namespace idemgate {

// The smallest of: the scheduler affinity mask (sched_getaffinity, which also reflects cpusets),
// the cgroup v2 `cpu.max` quota and the cgroup v1 CFS quota of this process's cgroup and its
// ancestors; a quota is rounded up (1.5 CPUs -> 2). Never less than 1. Reads /proc and /sys once
// per call; call it at start-up, not per request.
unsigned available_cpus();

// The same decision over a file-system tree rooted at `root` ("/" for the real system; a test
// passes a directory holding fake proc/self/cgroup, proc/self/mountinfo and sys/fs/cgroup/...)
// with `hardware` as the affinity count. Missing or unparsable files mean "no limit from there".
unsigned available_cpus(const std::filesystem::path& root, unsigned hardware);

} // namespace idemgate
