// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reconciliation of held keys (routes[].idempotency.reconcile): a key held because its outcome
// is unknown gets a probe, kept on the store's schedule, that asks the upstream whether the
// request took effect. Found: the key completes with the probe's answer; not found: the key is
// released; anything else: asked again every `every` until give_up_after. This is what settle
// writes on the schedule when it holds a key; the prober that sends it is reconcile/.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// A held key's probe, as the store's schedule keeps it: everything needed to send it and to
// complete or release the key, so any gateway on the store can.
struct probe_entry {
    std::string route;        // the route's path_prefix
    std::string tenant;       // the tenant header's value ("" = none)
    std::string scope_tenant; // the store scope's tenant part
    std::string key;
    std::string owner_token; // the held record's
    std::string fingerprint;
    std::int64_t created_unix_ms = 0;
    std::int64_t held_unix_ms = 0;
    std::int64_t record_ttl_ms = 0;
    std::string target; // the rendered path
};

std::string encode_probe(const probe_entry& p);
std::optional<probe_entry> decode_probe(std::string_view text);

// The probe's target: `path` with {key}, {tenant} and {json:<pointer>} (a string or number
// field of the held request's JSON body) substituted, percent-encoded (all but A-Z a-z 0-9 - . _ ~).
// nullopt when the body has no such field.
std::optional<std::string> render_probe_target(std::string_view path, std::string_view key,
                                               std::string_view tenant, std::string_view body);

} // namespace idemgate::gateway::detail
