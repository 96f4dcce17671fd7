// SPDX-License-Identifier: Apache-2.0
#include "idemgate/test/harness.hpp"

#include <thread>

namespace idemgate::test {

bool poll_until(milliseconds timeout, const std::function<bool()>& pred, milliseconds every)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!pred()) {
        if (std::chrono::steady_clock::now() > deadline)
            return false;
        std::this_thread::sleep_for(every); // the poll interval, not a wait for the effect
    }
    return true;
}

void wait_until(const std::string& what, milliseconds timeout, const std::function<bool()>& pred,
                milliseconds every)
{
    if (!poll_until(timeout, pred, every))
        throw std::runtime_error("timed out after " + std::to_string(timeout.count()) + " ms waiting until " +
                                 what);
}

} // namespace idemgate::test
