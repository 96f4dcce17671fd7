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

// store.type: memory, from store.memory. The memory store applies neither hash_keys nor
// encryption (records never leave the process; its warnings say so), and notifies its waiters in
// process whatever `settings` asks.
std::shared_ptr<backend> make_memory_store(const config::memory_config& cfg,
                                           const backend_settings& settings);

// store.encryption or store.hash_keys with the memory store: set, and not applied.
std::vector<std::string> memory_warnings(const config::memory_config& cfg, const config::store_config& store);

// Appends the memory store's gauges and counters (idemgate_memory_store_*).
void render_memory_metrics(const memory_stats& s, std::string& out);

} // namespace idemgate::store::detail
