// SPDX-License-Identifier: Apache-2.0
#pragma once
// The local tier (store.local_tier): finished records kept in the gateway process, one tier per
// I/O thread (no lock, no sharing), so a replay is answered without a store round trip. A copy is
// the answer as a protocol-neutral record (status, reason, fields, body) with its HTTP/1.1
// rendering made once beside it: an HTTP/1.x replay writes those bytes as they are, an HTTP/2
// replay builds its header block from the record's fields; neither rebuilds nor re-parses text.
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
#include <vector>

namespace idemgate::gateway::detail {

// A finished answer, bound to no protocol: its status, reason, fields in their order and body.
// The fields' names and values lie back to back in one string, found by offsets: one allocation
// for all of them.
struct tier_record {
    struct field {
        std::uint32_t offset; // of the name in `field_text`; the value follows it
        std::uint32_t name_size;
        std::uint32_t value_size;
    };

    unsigned status = 0;
    std::string reason; // "Created"
    std::string field_text;
    std::vector<field> fields; // every field of the replay, Content-Length included
    std::string body;

    std::string_view name(const field& f) const noexcept
    {
        return {field_text.data() + f.offset, f.name_size};
    }
    std::string_view value(const field& f) const noexcept
    {
        return {field_text.data() + f.offset + f.name_size, f.value_size};
    }
};

// One copy in the tier: the record and its HTTP/1.1 rendering, the bytes write_message would
// produce for it, split where the version and the Connection field go:
// "HTTP/1.x" + status_line + fields + Connection + CRLF + record.body.
struct tier_entry {
    std::string id;          // store::backend::record_id
    std::string fingerprint; // the first request's; another fingerprint asks the store
    tier_record record;
    struct {
        std::string status_line; // " 201 Created\r\n"
        std::string fields;      // every field line of the record, Content-Length included
    } http1;
    std::chrono::steady_clock::time_point expires;

    std::size_t bytes() const noexcept;
};

// What a copy is kept under: the record's ID, its fingerprint (the copy answers only the same
// request) and when it expires.
struct tier_slot {
    std::string id;
    std::string fingerprint;
    std::chrono::steady_clock::time_point expires;
};

class local_tier {
public:
    using clock = std::chrono::steady_clock;

    local_tier(std::size_t max_bytes, std::chrono::milliseconds max_age, metrics& stats);

    // The copy of `id` if there is a fresh one (an expired one is dropped); counts a hit or miss.
    std::shared_ptr<const tier_entry> find(std::string_view id, clock::time_point now);

    // Keeps a copy of the replay `response` of record `slot.id` until min(now + max_age,
    // slot.expires). A copy larger than the whole tier is not kept.
    void insert(tier_slot slot, const response_type& response, clock::time_point now);
    // The same, taking the body instead of copying it (a response made only for the tier).
    void insert(tier_slot slot, response_type&& response, clock::time_point now);

    void erase(std::string_view id);
    void clear();

    std::size_t bytes() const noexcept { return bytes_; }

private:
    using list_type = std::list<std::shared_ptr<const tier_entry>>;
    void drop(list_type::iterator it);
    void insert_with_body(tier_slot slot, const response_type& response, std::string body,
                          clock::time_point now);

    std::size_t max_bytes_;
    std::chrono::milliseconds max_age_;
    metrics& stats_;
    std::size_t bytes_ = 0;
    list_type lru_;                                                   // most recently used first
    std::unordered_map<std::string_view, list_type::iterator> index_; // keys view into entries' ids
};

} // namespace idemgate::gateway::detail
