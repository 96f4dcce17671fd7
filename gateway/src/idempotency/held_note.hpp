// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the gateway keeps on the store's index of held keys (store::held_index): the note settle
// writes when it holds a key, and what the prober (reconcile/) saw of it since; both JSON, read
// back by the admin API's list of held keys. With store.hash_keys neither carries the key or the
// tenant (the store never sees them in clear).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// The tenant a held key is listed under: its scope's tenant part without the credentials (they
// start at a space) and the route's key space (at 0x02), as the admin API's tenant= names it.
std::string_view held_label(std::string_view scope_tenant) noexcept;

struct held_note {
    std::string route; // the route's path_prefix
    std::int64_t held_unix_ms = 0;
    std::uint64_t attempt = 0;    // the held execution's number (attempt_header); 0 = not counted
    std::string principal;        // the credential hashes, as the access log shows them ("" = none)
    bool route_key_space = false; // the route keeps its own key space (key_space: route)
};

std::string encode_held_note(const held_note& n);
std::optional<held_note> decode_held_note(std::string_view text);

// What a probe of the held key last saw.
struct held_seen {
    std::int64_t at_unix_ms = 0;
    std::string seen; // e.g. "status 503: neither found nor not_found"
};

std::string encode_held_seen(const held_seen& s);
std::optional<held_seen> decode_held_seen(std::string_view text);

} // namespace idemgate::gateway::detail
