// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the reload tests share: editing the running gateway's file and waiting for its log.
#include "gateway_fixture.hpp"

#include <chrono>
#include <doctest/doctest.h>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace idemgate::test {

inline std::string read_text(const std::string& path)
{
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

inline void write_text(const std::string& path, const std::string& text)
{
    std::ofstream out(path, std::ios::trunc);
    out << text;
}

// `text` with the first `from` replaced by `to` (the test fails if it is not there).
inline std::string replaced(std::string text, const std::string& from, const std::string& to)
{
    auto at = text.find(from);
    REQUIRE_MESSAGE(at != std::string::npos, from);
    return text.replace(at, from.size(), to);
}

// The number of log lines of `g` containing `needle`.
inline std::size_t count_lines(gateway_process& g, const std::string& needle)
{
    std::size_t n = 0;
    for (const auto& l : g.process().lines())
        n += l.find(needle) != std::string::npos;
    return n;
}

// Waits (bounded by `wait`) for the n-th log line containing `needle` (reloads are logged once
// each).
inline bool logged(gateway_process& g, const std::string& needle, std::size_t count = 1,
                   std::chrono::milliseconds wait = std::chrono::seconds(5))
{
    auto deadline = std::chrono::steady_clock::now() + wait;
    while (std::chrono::steady_clock::now() < deadline) {
        if (count_lines(g, needle) >= count)
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20)); // polling the process's own log
    }
    return false;
}

} // namespace idemgate::test
