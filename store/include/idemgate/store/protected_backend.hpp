// SPDX-License-Identifier: Apache-2.0
#pragma once
// The protections every store backend gets, as a decorator over any store::backend and its
// sessions (store/src/protect/): make_backend wraps the configured backend in it when
// store.hash_keys or store.encryption is on, and not otherwise (no wrapper, no cost).
//
// - hash_keys: the backend sees hashed scopes only (store::scope::hashed: the key is the hex
//   HMAC-SHA256(key_secret, tenant \0 key), the tenant empty) and, for tenant quotas, the
//   tenant's tag (hex HMAC-SHA256(key_secret, tenant)); never a raw key or tenant.
// - encryption: a record's response part reaches the backend sealed (record::sealed_response,
//   record_codec.hpp's seal_record), bound to the backend's record_id of the record (":t"
//   appended for a tombstone); records coming back are opened under the current or previous key.
//   A record that does not open answers error::record_corrupt (reserve, lookup, wait,
//   find_tombstone) with no record, and the backend counts it (backend::record_unreadable).
//
// For Redis this is byte for byte what its backend wrote when it applied both itself: the key
// <prefix>:{<hex HMAC>}, the quota keys' {<hex HMAC of the tenant>} tag, and version-2 records
// bound to the Redis key.
#include <idemgate/store/record_cipher.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <string>
#include <string_view>

namespace idemgate::store {

// What the decorator applies.
struct record_protection {
    // store.hash_keys: the secret scopes and tenants are hashed under (store.key_secret); "" = off.
    std::string key_secret;
    // store.encryption: seals with its current key, opens with the current or previous one.
    record_cipher cipher;

    // Either protection is on: the backend needs the decorator.
    bool enabled() const noexcept { return !key_secret.empty() || cipher.opens(); }
};

// `inner` wrapped in the decorator applying `protection`. Its sessions offer the capabilities
// `inner`'s sessions offer, and no other.
std::shared_ptr<backend> protect_backend(std::shared_ptr<backend> inner, record_protection protection);

// The digest a hashed scope carries: lower-case hex HMAC-SHA256(secret, tenant \0 key).
std::string scope_digest(std::string_view secret, scope s);

// A tenant as a backend sees it with hash_keys: lower-case hex HMAC-SHA256(secret, tenant) (never
// a scope's digest: tenants hold no NUL byte).
std::string tenant_tag(std::string_view secret, std::string_view tenant);

} // namespace idemgate::store
