// SPDX-License-Identifier: Apache-2.0
// Shared by the config_*_test.cpp files: the smallest valid file, fake environments, and the
// problems a refused file reports.
#pragma once

#include "idemgate/config/config.hpp"

#include <cstdio>
#include <doctest/doctest.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace config_test {

namespace cfg = idemgate::config;

// The smallest valid file; cases append the block they are about.
inline const std::string minimal = R"(
upstreams:
  orders: { address: "127.0.0.1:8081" }
routes:
  - path_prefix: /api/
    upstream: orders
)";

inline const char* no_env(const char*)
{
    return nullptr;
}

inline const char* fake_env(const char* name)
{
    return std::string(name) == "REDIS_PASSWORD" ? "s3cret" : nullptr;
}

// The problems parse() reports for `yaml`; fails the test if it loads cleanly.
inline std::vector<std::string> problems_of(const std::string& yaml,
                                            const char* (*getenv_fn)(const char*) = no_env)
{
    try {
        cfg::parse(yaml, getenv_fn);
    } catch (const cfg::config_error& e) {
        return e.problems();
    }
    FAIL("config loaded although it should not have:\n" << yaml);
    return {};
}

inline std::string joined(const std::vector<std::string>& lines)
{
    std::string out;
    for (const auto& line : lines)
        out += (out.empty() ? "" : "\n") + line;
    return out;
}

// A file under the temp directory removed at scope exit.
struct temp_file {
    std::filesystem::path path;
    explicit temp_file(const std::string& text)
        : path(std::filesystem::temp_directory_path() /
               ("idemgate_config_test_" + std::to_string(::getpid()) + ".yaml"))
    {
        std::ofstream(path) << text;
    }
    ~temp_file() { std::filesystem::remove(path); }
};

} // namespace config_test
