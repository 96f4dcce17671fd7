// SPDX-License-Identifier: Apache-2.0
#pragma once
// Every answer the idempotency filter gives instead of forwarding a request, in one table: its
// problem type (and so its status), the access log's outcome, what the status header says about
// the key, Retry-After and whether the
// connection closes. A policy about what a refusal answers edits its row here. Pure values.
#include <boost/describe/enum.hpp>
#include <idemgate/common/enum_count.hpp>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/problem_types.hpp>
#include <string_view>

namespace idemgate::gateway {

BOOST_DEFINE_ENUM_CLASS(
    refusal,
    no_route,                   // no route matches the path
    invalid_path,               // the path has no normal form (a bad escape, ".." above the root)
    bad_connection_header,      // Connection names the key or tenant header
    missing_key,                // the route requires a key and the request has none
    invalid_key,                // several key lines, or not 1 to 255 visible ASCII characters
    missing_tenant,             // a keyed request without the route's tenant header
    invalid_tenant,             // several tenant lines, or not 1 to 255 visible ASCII characters
    missing_client_certificate, // tenant_from: client_cert and no verified certificate
    invalid_certificate_tenant, // the certificate's common name cannot be a tenant
    in_flight,                  // the first request with this key has not finished
    released,                   // wait mode: the first request failed and its key was released
    outcome_unknown,            // the first request was sent and no answer came: held
    mismatch,                   // the key was first used with another fingerprint
    too_many_waiting,           // wait mode: limits.max_waiting duplicates wait already
    store_unavailable,          // the key cannot be reserved and store.on_failure: reject
    quota_unavailable,          // the tenant quota cannot be checked and store.on_failure: reject
    tenant_in_flight_limit,     // the tenant has max_in_flight requests in flight
    tenant_key_rate,            // the tenant's new_keys_per_second is exhausted
    not_replayable,             // the first answer was too big to record (a status-only record)
    record_expired,             // the record expired; its tombstone remains (tombstone_ttl)
    store_refusing,             // a new key while the store refuses writes and store.on_failure: reject
    store_full,                 // the store has no room for a new key and store.on_failure: reject
    decoded_body_too_large      // fingerprint.decode: gzip and the decoded body is over max_request_body
);
inline constexpr int refusal_count = enum_count<refusal>;

enum class retry_hint {
    none,
    one_second, // Retry-After: 1
    quota_wait, // Retry-After: the quota's own wait, rounded up to seconds (retry_after_seconds)
    full_wait   // Retry-After: until the store's oldest record expires (at most 60 s), likewise
};

struct refusal_rule {
    refusal reason;
    problem type;   // the problem document's type and title, and its status
    outcome result; // the access log's outcome and the metrics label
    key_status key; // what the status header says about the key (none: no key, or no route)
    retry_hint retry_after;
    bool close;              // the connection closes after the answer
    std::string_view detail; // the document's detail; empty: worded where it is refused (route, path)
    bool status_from_route;  // the route's mismatch_status replaces the problem's status
};

// The row of `r`.
const refusal_rule& rule_for(refusal r) noexcept;

} // namespace idemgate::gateway
