// SPDX-License-Identifier: Apache-2.0
#pragma once
// The store's index of held keys (capability::held, session::held()).
#include <idemgate/store/store.hpp>

namespace idemgate::store {

// A held key as the index lists it (held_index::held_keys).
struct held_key {
    std::string label;  // the tenant it was listed under (with store.hash_keys: the tenant's tag)
    std::string tenant; // the scope's tenant part ("" for a hashed scope)
    std::string key;    // the scope's key (for a hashed scope: its digest)
    bool hashed = false;
    std::string record_id; // the backend's name of the record (backend::record_id)
    std::string note;      // what the gateway wrote when it held the key ("" when lost)
    std::string seen;      // what it wrote since (held_index::note_held); "" = nothing
    record held;           // the held record (state outcome_unknown)
    std::int64_t expires_in_ms = 0;
};

// A page of held keys (held_index::held_keys).
struct held_page {
    boost::system::error_code ec;
    std::vector<held_key> keys;
    std::string next; // where the next page starts (its `after`); "" = the index ends here
};

// What the index keeps beside a held key: the label it is listed under (the tenant), the holder's
// owner token (the text is kept only while it holds the key), the text itself (the gateway's note
// when the key is held, what the probe saw since), and how long it is kept.
struct held_text {
    std::string_view label;
    std::string_view owner_token;
    std::string_view text;
    duration ttl{0};
};

// Held keys (record state outcome_unknown): an index written when a key is held, so an operator
// can list them and settle each (the admin API), without scanning the store. An entry names its
// key's scope under a label (the tenant, which a listing may be filtered by) and carries the
// gateway's opaque texts; an entry whose key no longer holds its outcome_unknown record is
// dropped when a listing meets it.
class held_index {
public:
    // Lists `s`, just held by entry.owner_token for entry.ttl, under entry.label, with the
    // gateway's note (entry.text).
    virtual boost::asio::awaitable<boost::system::error_code> list_held(scope s, const held_text& entry) = 0;
    // Keeps what the probe saw (seen.text) beside the key while seen.owner_token holds it (at most
    // seen.ttl), replacing what was.
    virtual boost::asio::awaitable<boost::system::error_code> note_held(scope s, const held_text& seen) = 0;
    // Takes `s` off the index (settled).
    virtual boost::asio::awaitable<boost::system::error_code> unlist_held(scope s,
                                                                          std::string_view label) = 0;
    // Up to `limit` held keys in the index's order after `after` ("" = from its start), only
    // those listed under `label` when `by_label`.
    virtual boost::asio::awaitable<held_page> held_keys(std::string_view label, bool by_label,
                                                        std::string_view after, std::size_t limit) = 0;
    // While the key holds owner_token's outcome_unknown record: replaces it by `resolved` (kept
    // `ttl`), or removes it when `resolved` is null. error::not_owner otherwise (a probe or a
    // retry changed the key meanwhile).
    virtual boost::asio::awaitable<boost::system::error_code>
    resolve_held(scope s, std::string_view owner_token, const record* resolved, duration ttl) = 0;

protected:
    ~held_index() = default;
};

} // namespace idemgate::store
