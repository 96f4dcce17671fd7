// SPDX-License-Identifier: Apache-2.0
#pragma once
// Picks the store backend named by the configuration.
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::store {

// store.type memory -> the embedded store (memory.max_entries); redis -> the Redis store; each
// wrapped in the protection decorator (protected_backend.hpp) when store.hash_keys or
// store.encryption is on, so every backend applies both.
// `publish_settled`: some route waits for in-flight duplicates (on_in_flight: wait), so the
// Redis store publishes settlements and subscribes for its waiters (the memory store always
// notifies in process).
std::shared_ptr<backend> make_backend(const config::store_config& cfg, bool publish_settled = false);

// What config::load cannot check without the store's libraries, one problem per line naming the
// key path: the TLS files OpenSSL must accept (PEM certificates, a private key that matches its
// certificate). Empty when the store can be built. Run by --check and before start-up.
std::vector<std::string> check_backend_config(const config::store_config& cfg);

// The capabilities (store::capability bits) the sessions of the backend `type` offer.
unsigned backend_capabilities(config::store_type type);

// What the routes and tenants of `cfg` ask of the store that the backend `type` does not offer,
// one problem per line naming the key that asks (`routes[2].idempotency.tombstone_ttl: store.type
// memory does not keep tombstones`). Empty when it offers all they ask. Run by --check, before
// start-up and on every reload (with the running store's type: store.type is restart-only).
std::vector<std::string> check_store_capabilities(const config::config& cfg, config::store_type type);

// The same match against any set of capabilities (`offered`, of a backend named `type_name`).
std::vector<std::string> missing_capabilities(const config::config& cfg, unsigned offered,
                                              std::string_view type_name);

// What the chosen backend warns about its section (valid but risky settings), one line per
// warning naming the key path, before config::warnings' (--check, start-up and every reload).
std::vector<std::string> backend_warnings(const config::store_config& cfg);

// What the chosen backend guarantees across a failover, and what it costs, in one sentence for
// --check and the start-up log (the Redis consistency); "" when its row says nothing (memory).
std::string consistency_guarantee(const config::store_config& cfg);

} // namespace idemgate::store
