// SPDX-License-Identifier: Apache-2.0
#pragma once
// The local tier (store.local_tier): finished records kept in the gateway process, one tier per
// I/O thread (no lock, no sharing), as pre-rendered response bytes, so a replay is answered
// without a store round trip and without rebuilding its header fields.
//
// Correctness rules:
// - only completed records enter; in-flight, held and absent keys always ask the store;
// - a copy never outlives max_age, nor its record's TTL in the store: a copy made from our own
//   complete expires at complete + record_ttl (the store's TTL starts a moment later); a copy
//   of a record read from the store at created + record_ttl, a lower bound of the store's expiry
//   (the record was completed after it was created, with that record_ttl);
// - a record an operator removes is dropped from every thread of every gateway sharing the store
//   (store::backend::on_removed; Redis pub/sub between gateways);
// - bounded memory: least recently used copies are evicted past max_bytes / threads.
#include "core/exchange.hpp"
#include "state/worker.hpp"

#include <chrono>
#include <cstdint>
#include <idemgate/gateway/metrics.hpp>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

namespace idemgate::gateway::detail {

// One finished record, ready to write: "HTTP/1.x" + status_line + fields + connection + CRLF + body.
struct tier_entry {
    std::string id;          // store::backend::record_id
    std::string fingerprint; // the first request's; another fingerprint asks the store
    std::string status_line; // " 201 Created\r\n"
    std::string fields;      // every field line of the replay, Content-Length included
    std::string body;
    unsigned status = 0;
    std::chrono::steady_clock::time_point expires;

    std::size_t bytes() const noexcept;
};

class local_tier {
public:
    using clock = std::chrono::steady_clock;

    local_tier(std::size_t max_bytes, std::chrono::milliseconds max_age, metrics& stats);

    // The copy of `id` if there is a fresh one (an expired one is dropped); counts a hit or miss.
    std::shared_ptr<const tier_entry> find(std::string_view id, clock::time_point now);

    // Keeps a copy of the replay `response` of record `id` until min(now + max_age, expires).
    // A copy larger than the whole tier is not kept.
    void insert(std::string id, std::string fingerprint, const response_type& response,
                clock::time_point expires, clock::time_point now);
    // The same, taking the body instead of copying it (a response made only for the tier).
    void insert(std::string id, std::string fingerprint, response_type&& response, clock::time_point expires,
                clock::time_point now);

    void erase(std::string_view id);
    void clear();

    std::size_t bytes() const noexcept { return bytes_; }

private:
    using list_type = std::list<std::shared_ptr<const tier_entry>>;
    void drop(list_type::iterator it);
    void insert_with_body(std::string id, std::string fingerprint, const response_type& response,
                          std::string body, clock::time_point expires, clock::time_point now);

    std::size_t max_bytes_;
    std::chrono::milliseconds max_age_;
    metrics& stats_;
    std::size_t bytes_ = 0;
    list_type lru_;                                                   // most recently used first
    std::unordered_map<std::string_view, list_type::iterator> index_; // keys view into entries' ids
};

} // namespace idemgate::gateway::detail
