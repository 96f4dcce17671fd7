// SPDX-License-Identifier: Apache-2.0
#include "idemgate/test/chromium.hpp"

#include <cstdlib>
#include <sstream>
#include <unistd.h>

namespace idemgate::test {

namespace {

// The program's path in $PATH, or "".
std::string program_in_path(const std::string& name)
{
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        auto candidate = (dir.empty() ? std::string(".") : dir) + "/" + name;
        if (::access(candidate.c_str(), X_OK) == 0)
            return candidate;
    }
    return "";
}

} // namespace

chromium_run run_in_chromium(const std::string& steps_json, milliseconds timeout)
{
    chromium_run out;
    const auto chromium = program_in_path("chromium");
    if (chromium.empty()) {
        out.output =
            "chromium is not in PATH: scripts/install-deps.sh installs it (apt-get install chromium)";
        return out;
    }
    temp_dir dir;
    const auto steps = dir.write_file("steps.json", steps_json);
    child_process driver("/usr/bin/python3", {IDEMGATE_CDP_DRIVER, chromium, steps});
    out.exit_status = driver.wait_exit(timeout);
    out.output = driver.output();
    if (!out.exit_status)
        out.output =
            "the driver did not finish within " + std::to_string(timeout.count()) + " ms\n" + out.output;
    for (auto& line : driver.lines()) {
        if (line.starts_with("{\"console\": "))
            out.console = line.substr(12, line.size() - 13);
        else if (line.starts_with("{\"step\": "))
            out.steps.push_back(std::move(line));
    }
    return out;
}

} // namespace idemgate::test
