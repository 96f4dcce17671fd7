// SPDX-License-Identifier: Apache-2.0
#pragma once
// The embedded store: one process, TTLs, bounded size. Keys are spread over shards, each with
// its own mutex, map and expiry index, so threads working on different keys rarely wait for
// each other and no critical section does I/O or walks the whole store.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <idemgate/store/store.hpp>
#include <optional>

namespace idemgate::store {

struct memory_options {
    std::size_t max_entries = 100000;
    std::size_t max_bytes = 256 * 1024 * 1024;
    // Most expired entries one reservation reclaims (besides its own key's), so its cost is
    // bounded: when that does not make room it fails with error::store_full, and the next
    // reservation reclaims further. At least 1.
    std::size_t reclaim_budget = 64;
    // Injectable clock for tests; default steady_clock::now.
    std::function<std::chrono::steady_clock::time_point()> now;
    // Test hook: runs while a reservation holds shard `shard`'s lock to reclaim expired entries.
    std::function<void(std::size_t shard)> while_reclaiming;
};

// How many shards the memory store splits its keys over.
inline constexpr std::size_t memory_store_shards = 16;

std::shared_ptr<backend> make_memory_backend(memory_options options);

// The map key of a scope: length-prefixed tenant then key, so no (tenant, key) pair can
// produce another pair's map key.
std::string scope_map_key(scope s);

// The shard (0 .. memory_store_shards - 1) that holds a scope.
std::size_t memory_store_shard(scope s);

// What one entry is charged against max_bytes: its map key, record strings and a fixed
// overhead for the node, the strings' headers and the headers vector.
std::size_t charged_bytes(std::string_view map_key, const record& r) noexcept;

// Counters of a memory store, read without stopping it (each field is read on its own, so the
// set is not one atomic snapshot). Meant for metrics and tests.
struct memory_stats {
    std::size_t entries = 0;        // keys held: live, or expired and not yet reclaimed
    std::size_t bytes = 0;          // bytes charged against max_bytes
    std::uint64_t examined = 0;     // expiry-index entries compared with the clock, ever
    std::uint64_t reclaimed = 0;    // expired entries removed, ever
    std::uint64_t refused_full = 0; // reservations answered with error::store_full, ever
};

// The counters of `b`, or nullopt when `b` is not a memory store.
std::optional<memory_stats> memory_store_stats(const backend& b);

} // namespace idemgate::store
