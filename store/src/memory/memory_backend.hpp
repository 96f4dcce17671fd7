// SPDX-License-Identifier: Apache-2.0
#pragma once
// The memory store's entry points for the backend table (backend_table.hpp). Private to the
// store library.
#include "backend_table.hpp"

#include <idemgate/config/config.hpp>
#include <idemgate/store/memory_store.hpp>
#include <memory>
#include <string>
#include <vector>

namespace idemgate::store::detail {

// store.type: memory, from store.memory. hash_keys and encryption are the protection
// decorator's (protected_backend.hpp: the store keeps the hashed scopes and sealed records it is
// handed); it notifies its waiters in process whatever `settings` asks.
std::shared_ptr<backend> make_memory_store(const config::memory_config& cfg,
                                           const backend_settings& settings);

// Appends the memory store's gauges and counters (idemgate_memory_store_*).
void render_memory_metrics(const memory_stats& s, std::string& out);

} // namespace idemgate::store::detail
