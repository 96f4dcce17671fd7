// SPDX-License-Identifier: Apache-2.0
#pragma once
// Runs the raw-frame HTTP/2 client tests/gateway/h2_driver.py (Debian's python3-hyperframe and
// python3-hpack) against a gateway and returns what it printed.
#include "gateway_fixture.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>
#include <string>
#include <vector>

namespace idemgate::test {

// The driver's JSON lines (each one object), once it exited; a driver that fails or hangs fails
// the calling test with its output.
inline std::vector<boost::json::object> h2_driver(std::vector<std::string> args, milliseconds timeout = 30s)
{
    // Built by appending: inserting at the front trips a GCC 12 -Warray-bounds false positive.
    std::vector<std::string> command{IDEMGATE_SOURCE_DIR "/tests/gateway/h2_driver.py"};
    for (auto& a : args)
        command.push_back(std::move(a));
    child_process driver("/usr/bin/python3", command);
    auto status = driver.wait_exit(timeout);
    INFO("h2_driver output:\n" << driver.output());
    REQUIRE(status.has_value());
    CHECK(*status == 0);
    std::vector<boost::json::object> out;
    for (const auto& line : driver.lines())
        if (!line.empty() && line.front() == '{')
            out.push_back(boost::json::parse(line).as_object());
    return out;
}

inline std::string h2_port(std::uint16_t port)
{
    return std::to_string(port);
}

} // namespace idemgate::test
