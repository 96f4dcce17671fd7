// SPDX-License-Identifier: Apache-2.0
#pragma once
// Resolving held keys by asking the upstream (routes[].idempotency.reconcile).
#include <chrono>
#include <string>
#include <vector>

namespace idemgate::config {

// The path's placeholders {key}, {tenant} and {json:<JSON Pointer>} (a field of the held
// request's body) are filled, percent-encoded, when the key is held.
struct reconcile_config {
    std::string path; // "" = off
    std::string method = "GET";
    std::chrono::milliseconds after{2000};           // the first probe, this long after the key was held
    std::chrono::milliseconds every{10000};          // then again this often
    std::chrono::milliseconds give_up_after{600000}; // then the key stays held until record_ttl
    std::vector<unsigned> found{200};
    std::vector<unsigned> not_found{404};
    bool enabled() const noexcept { return !path.empty(); }
};

} // namespace idemgate::config
