// SPDX-License-Identifier: Apache-2.0
#pragma once
// Headless Chromium for the tests that need a real browser (the admin console, the load tester's
// report page), driven over the DevTools protocol by tests/support/cdp_driver.py: the one place
// that knows how Chromium is started (its flags, a fresh profile, the protocol's pipe).
#include "idemgate/test/harness.hpp"

#include <optional>
#include <string>
#include <vector>

namespace idemgate::test {

// What one run of the driver gave.
struct chromium_run {
    // The driver's exit status: 0 when every step ran; nullopt when Chromium is not installed or
    // the driver did not finish in time (`output` says which).
    std::optional<int> exit_status;
    // One JSON object per step that ran, in order: {"step": i, "op": ..., "ok": ..., "value" |
    // "error": ...}.
    std::vector<std::string> steps;
    // A JSON array: every console message, exception and browser log entry (a refused load among
    // them) the page produced; "[]" when the driver did not get that far.
    std::string console = "[]";
    // Everything the driver printed (its steps, a failed step's DOM, Chromium's log), for a
    // failure's message.
    std::string output;
};

// Runs `steps_json` (a JSON array of cdp_driver.py's steps: goto, wait, eval, type, click,
// screenshot) on one page of a fresh headless Chromium, found in $PATH (Debian's chromium,
// which scripts/install-deps.sh installs).
chromium_run run_in_chromium(const std::string& steps_json, milliseconds timeout = 60s);

} // namespace idemgate::test
