// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency decision: pure functions, no I/O. The session coroutine asks them what to do
// at each step (classify -> reserve -> forward -> record/release) and carries the answer out.
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/key_syntax.hpp>
#include <idemgate/gateway/outcome.hpp>
#include <idemgate/store/store.hpp>
#include <string_view>

namespace idemgate::gateway {

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
    record_expired,             // 422: only the record's tombstone remains (tombstone_ttl)
    // Steps the route's policy adds before the answer is known (reserve_rules):
    observe,           // shadow mode: forward as if unguarded; shadow_after_reserve of the enforcing
                       // action is the finding
    wait_for_first,    // wait mode: wait until the first request settles (decide_after_wait then)
    look_for_tombstone // the key was free on a route with tombstones: its record may have expired
                       // and left one (decide_after_tombstone then)
};

// Phase 2: what the store said about the key.
reserve_action decide_after_reserve(const store::reserve_result& result, std::string_view fingerprint,
                                    config::failure_mode on_failure) noexcept;

// What a route asks of phase 2 beyond on_failure.
struct reserve_rules {
    config::failure_mode on_failure = config::failure_mode::reject;
    bool shadow = false;     // mode: shadow: observed, never enforced
    bool waits = false;      // on_in_flight: wait
    bool tombstones = false; // tombstone_ttl > 0
};
reserve_rules reserve_rules_of(const config::idempotency_config& policy,
                               config::failure_mode on_failure) noexcept;

// Phase 2 with the route's policy: decide_after_reserve, then in shadow mode anything but
// forward_and_record is observed; an in-flight conflict in wait mode waits; a key acquired on a
// route with tombstones looks for one.
reserve_action decide_after_reserve(const store::reserve_result& result, std::string_view fingerprint,
                                    const reserve_rules& rules) noexcept;

// Phase 2 after look_for_tombstone (the key was reserved): no tombstone -> forward_and_record; a
// tombstone -> decide_on_tombstone; the store failed -> forward_and_record under pass_through,
// reject_store_failure under reject. Anything but forward_and_record frees the key again first.
reserve_action decide_after_tombstone(const store::tombstone_result& found, std::string_view fingerprint,
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

// What came of the upstream call: `answered` is false for connect/timeout/protocol errors (the
// gateway's own 502/504); `request_sent` says whether the whole request was written before that
// happened.
struct after_upstream {
    bool answered = false;
    unsigned status = 0;
    bool request_sent = false;
};

// Phase 3: after the upstream call. An answer's status takes its action from `on_status` (the
// route's routes[].idempotency.on_status); no answer holds when the request was sent and
// on_unknown is hold, and releases otherwise.
completion_action decide_after_upstream(after_upstream what, config::unknown_outcome_mode on_unknown,
                                        const config::status_policy& on_status) noexcept;
// The same with the default on_status (tests and callers without a route).
completion_action decide_after_upstream(
    after_upstream what,
    config::unknown_outcome_mode on_unknown = config::unknown_outcome_mode::release) noexcept;

// What the client is told after a settled forward: executed (recorded), released or held, or
// released when the store failed to record or hold (the key frees at lock_ttl).
key_status status_after_settle(completion_action action, bool store_ok) noexcept;

// Whether a replay leaves out the field `name`: Date (a replay carries a fresh one) and every
// name matching one of `patterns` (case-insensitive; a trailing '*' matches a prefix).
bool dropped_from_replay(std::string_view name, const std::vector<std::string>& patterns) noexcept;

// Phase 1 in shadow mode: a rejection becomes a forwarded request with a finding.
shadow_finding shadow_after_classify(request_verdict v) noexcept;
// Phase 2 in shadow mode. forward_and_record and pass_through are not findings.
shadow_finding shadow_after_reserve(reserve_action a) noexcept;

} // namespace idemgate::gateway
