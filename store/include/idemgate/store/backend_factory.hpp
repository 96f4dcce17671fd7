#pragma once
// Picks the store backend named by the configuration.
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <memory>

namespace idemgate::store {

// store.type memory -> the embedded store (memory.max_entries); redis -> the Redis store, with
// hash_keys and encryption (the memory store applies neither; config::warnings says so).
std::shared_ptr<backend> make_backend(const config::store_config& cfg);

} // namespace idemgate::store
