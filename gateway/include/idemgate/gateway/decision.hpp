// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency decision: pure functions, no I/O. The session coroutine asks them what to do
// at each step (classify -> reserve -> forward -> record/release) and carries the answer out.
#include <boost/describe/enum.hpp>
#include <idemgate/common/enum_count.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/key_syntax.hpp>
#include <idemgate/store/store.hpp>
#include <string_view>

namespace idemgate::gateway {

// What happened to one request; the access log's "outcome" and the metrics label. A request
// forwarded as its key's owner says what became of the key (executed, released, held); one that
// was not forwarded says why (replayed, a refusal) or that it was not guarded (pass_through).
// The status code says the rest: a released 502 is the gateway's own answer, a released 503 the
// upstream's.
BOOST_DEFINE_ENUM_CLASS(
    outcome,
    executed,       // first request for a key: forwarded and recorded
    replayed,       // finished duplicate: answered from the record
    conflict,       // duplicate while the first is still in flight (or held, or just released): 409
    mismatch,       // same key, other fingerprint: 409 or 422
    rejected,       // bad request answered by the gateway (4xx before the store)
    store_error,    // store failed and on_failure: reject -> 503
    pass_through,   // not guarded (no key, method not listed) or store failed with pass_through
    released,       // forwarded as the key's owner, not recorded, the key freed: a retry executes
    held,           // forwarded as the key's owner, not recorded, the key held as outcome_unknown
    throttled,      // a new key beyond its tenant's quota: 429, upstream not called
    not_replayable, // the first answer was too big to record: 422, upstream not called
    expired,        // the record expired, its tombstone remains: 422, upstream not called
    reconciled      // a held key resolved by a probe (reconcile): its answer replayed
);
std::string_view to_string(outcome o) noexcept;
inline constexpr int outcome_count = enum_count<outcome>;

// What the gateway tells the client about its key (routes[].idempotency.status_header), for
// every answer to a request that carried one.
enum class key_status {
    none,           // no header: the request carried no key, or there is no route
    executed,       // forwarded and recorded: a retry replays this answer
    replayed,       // answered from the record
    released,       // not recorded (or refused after the key was taken): a retry executes
    held,           // the outcome is unknown: a retry gets 409 outcome-unknown
    in_flight,      // the first request with this key is still running: retry later
    mismatch,       // the key was used for another request
    rejected,       // refused before the key was reserved: fix the request and retry
    unavailable,    // the store could not be asked: a retry may execute
    ignored,        // not guarded: a route or method without idempotency, or shadow mode
    not_replayable, // the first answer was too big to record: it is never executed again
    expired,        // the first answer's record expired (a tombstone remains): never executed again
    reconciled      // a held key's outcome was found by a probe (reconcile): its answer replayed
};
std::string_view to_string(key_status s) noexcept;

// 1 to 255 visible ASCII characters (0x21-0x7E): a tenant header's value.
bool is_valid_key(std::string_view key) noexcept;
// A tenant taken from a client certificate's common name: 1 to 255 bytes, no control
// characters (spaces and UTF-8 allowed, as names in certificates have them).
bool is_valid_certificate_tenant(std::string_view name) noexcept;
// The store's tenant part for a tenant from a client certificate: "\x01" + the name with '%'
// and ' ' percent-encoded. A header tenant (visible ASCII) never starts with "\x01", so a
// client naming a tenant in a header never reaches a certificate-authenticated tenant's
// records; and it has no space, which starts the credential part (see resolved_scope in scope.hpp).
std::string certificate_scope_tenant(std::string_view name);

// The header facts that classify a request (counts are header lines with that name).
struct request_facts {
    std::string_view method;
    int key_count = 0;
    std::string_view key; // the decoded key (parse_key_field)
    int tenant_count = 0;
    std::string_view tenant;
    key_syntax key_error = key_syntax::ok; // the key field's syntax
    std::size_t key_error_at = 0;          // where its problem is
};

enum class request_verdict {
    pass_through,          // forward untouched, never stored
    guard,                 // reserve (tenant, key) and go on
    reject_missing_key,    // 400: required: true and no key
    reject_invalid_key,    // 400: several header lines, a malformed quoted key, or outside key_format
    reject_missing_tenant, // 400: tenant_header configured, keyed request without it
    reject_invalid_tenant, // 400: several tenant lines or not visible ASCII
};

// The method is one of the route's guarded methods.
bool guards_method(const config::idempotency_config& policy, std::string_view method) noexcept;

// Phase 1: given the route's policy (enabled == false: no idempotency on the route).
request_verdict classify(const config::idempotency_config& policy, const request_facts& facts) noexcept;

// For reject_invalid_key: what is wrong with the key, in words (the problem's detail).
std::string invalid_key_detail(const config::idempotency_config& policy, const request_facts& facts);

enum class reserve_action {
    forward_and_record,         // we own the key: forward, then record or release
    replay,                     // finished record with our fingerprint
    in_flight_conflict,         // 409 + Retry-After
    fingerprint_mismatch,       // 409 / 422
    outcome_unknown,            // 409 outcome-unknown: sent before, no answer, held (never resent)
    released_conflict,          // wait mode: the first request failed and its key was released
                                // while we waited: 409 + Retry-After, so the client's retry runs it
    reject_store_failure,       // 503, upstream not called
    pass_through_store_failure, // forward unprotected, counted
    not_replayable,             // 422: the first answer was too big to record (a status-only record)
    record_expired              // 422: only the record's tombstone remains (tombstone_ttl)
};

// Phase 2: what the store said about the key.
reserve_action decide_after_reserve(const store::reserve_result& result, std::string_view fingerprint,
                                    config::failure_mode on_failure) noexcept;

// Phase 2 with tombstones: the key was reserved (its record had expired) and `tombstone` is
// what outlived the record. Same fingerprint: record_expired; another: fingerprint_mismatch.
reserve_action decide_on_tombstone(const store::record& tombstone, std::string_view fingerprint) noexcept;

// Phase 2, wait mode (on_in_flight: wait): a duplicate of an in-flight request waited with
// store::session::wait_settled. A store failure or the deadline answer 409 as reject mode would
// have (never a pass-through: the first request may still be running).
reserve_action decide_after_wait(const store::wait_result& result, std::string_view fingerprint) noexcept;

// The limits and TTLs that apply to a tenant's request: the tenant's entry (or "default")
// overrides the route's TTLs.
struct tenant_policy {
    store::tenant_limits limits;
    bool limited = false; // some limit is set: the reservation must be admitted
    config::duration lock_ttl{0};
    config::duration record_ttl{0};
};
tenant_policy resolve_tenant_policy(const config::config& cfg, const config::idempotency_config& route,
                                    std::string_view tenant);

enum class quota_action {
    forward,             // admitted
    reject_quota,        // 429 tenant-quota-exceeded + Retry-After; the key is released
    reject_store_failure // the quota could not be checked and on_failure: reject: 503, key released
};

// Phase 2b, after store::session::admit for a limited tenant. A store failure with
// on_failure: pass_through forwards (the key is held, only the quota is not enforced).
quota_action decide_after_admit(const store::admit_result& result, config::failure_mode on_failure) noexcept;

// Retry-After seconds for a wait of `ms` milliseconds: rounded up, at least 1.
long long retry_after_seconds(long long ms) noexcept;

BOOST_DEFINE_ENUM_CLASS(
    completion_action,
    record,  // keep the answer for replay
    release, // free the key so a retry really runs
    hold     // keep the key as outcome_unknown: duplicates get 409, the request is never resent
);

// Phase 3: after the upstream call. `upstream_answered` is false for connect/timeout/protocol
// errors (the gateway's own 502/504); `request_sent` says whether the whole request was written
// before that happened. An answer's status takes its action from `on_status` (the route's
// routes[].idempotency.on_status); no answer holds when the request was sent and on_unknown is
// hold, and releases otherwise.
completion_action decide_after_upstream(bool upstream_answered, unsigned status, bool request_sent,
                                        config::unknown_outcome_mode on_unknown,
                                        const config::status_policy& on_status) noexcept;
// The same with the default on_status (tests and callers without a route).
completion_action decide_after_upstream(
    bool upstream_answered, unsigned status, bool request_sent = false,
    config::unknown_outcome_mode on_unknown = config::unknown_outcome_mode::release) noexcept;

// What the client is told after a settled forward: executed (recorded), released or held, or
// released when the store failed to record or hold (the key frees at lock_ttl).
key_status status_after_settle(completion_action action, bool store_ok) noexcept;

// Whether a replay leaves out the field `name`: Date (a replay carries a fresh one) and every
// name matching one of `patterns` (case-insensitive; a trailing '*' matches a prefix).
bool dropped_from_replay(std::string_view name, const std::vector<std::string>& patterns) noexcept;

// Shadow mode (routes[].idempotency.mode: shadow): every request is forwarded as if unguarded,
// reserve/complete still run, and this says what enforcement would have done instead.
BOOST_DEFINE_ENUM_CLASS(shadow_finding,
                        none,           // enforcement would have forwarded it too
                        would_replay,   // a finished record with the same fingerprint exists
                        would_conflict, // the first request with this key is still in flight
                        would_mismatch, // the key was used with another fingerprint
                        would_reject    // a 400 (key or tenant missing or invalid) or a 503 (store failure)
);
inline constexpr int shadow_finding_count = enum_count<shadow_finding>;
std::string_view to_string(shadow_finding f) noexcept;

// Phase 1 in shadow mode: a rejection becomes a forwarded request with a finding.
shadow_finding shadow_after_classify(request_verdict v) noexcept;
// Phase 2 in shadow mode. forward_and_record and pass_through are not findings.
shadow_finding shadow_after_reserve(reserve_action a) noexcept;

} // namespace idemgate::gateway
