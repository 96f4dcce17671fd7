// SPDX-License-Identifier: Apache-2.0
#pragma once
// The test-only store (store.type: map), built only with IDEMGATE_TEST_BACKEND (the tests' builds,
// never a release): a second in-process backend written against the interface alone, to prove
// that a backend is its folder plus its row. Private to the store library.
#include "backend_table.hpp"

#include <idemgate/store/store.hpp>
#include <memory>

namespace idemgate::store::detail {

// What the map store's sessions offer: the core and every capability but tenant quotas, so a
// configuration with limited tenants is refused by the check (a backend lacking a capability).
inline constexpr unsigned map_capabilities =
    static_cast<unsigned>(capability::wait) | static_cast<unsigned>(capability::tombstones) |
    static_cast<unsigned>(capability::attempts) | static_cast<unsigned>(capability::probes) |
    static_cast<unsigned>(capability::shadow_report) | static_cast<unsigned>(capability::held);

// store.type: map. It has no section of its own; hash_keys and encryption are the protection
// decorator's (protected_backend.hpp), as for every backend.
std::shared_ptr<backend> make_map_store(const backend_settings& settings);

} // namespace idemgate::store::detail
