#pragma once
// The embedded store: one process, TTLs, bounded size. Sessions share one map under a mutex
// whose critical sections never do I/O.
#include <cstddef>
#include <functional>
#include <idemgate/store/store.hpp>

namespace idemgate::store {

struct memory_options {
    std::size_t max_entries = 100000;
    std::size_t max_bytes = 256 * 1024 * 1024;
    // Injectable clock for tests; default steady_clock::now.
    std::function<std::chrono::steady_clock::time_point()> now;
};

std::shared_ptr<backend> make_memory_backend(memory_options options);

// The map key of a scope: length-prefixed tenant then key, so no (tenant, key) pair can
// produce another pair's map key.
std::string scope_map_key(scope s);

// What one entry is charged against max_bytes: its map key, record strings and a fixed
// overhead for the node, the strings' headers and the headers vector.
std::size_t charged_bytes(std::string_view map_key, const record& r) noexcept;

} // namespace idemgate::store
