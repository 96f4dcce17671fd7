// SPDX-License-Identifier: Apache-2.0
#pragma once
// What became of a request, as every room reports it (the access log, the metrics, the answer's
// status header, the trace): values of the core room, decided by the idempotency decision
// (<idemgate/gateway/decision.hpp>).
#include <string_view>

namespace idemgate::gateway {

// What happened to one request; the access log's "outcome" and the metrics label. A request
// forwarded as its key's owner says what became of the key (executed, released, held); one that
// was not forwarded says why (replayed, a refusal) or that it was not guarded (pass_through).
// The status code says the rest: a released 502 is the gateway's own answer, a released 503 the
// upstream's.
enum class outcome {
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
};
std::string_view to_string(outcome o) noexcept;
inline constexpr int outcome_count = static_cast<int>(outcome::reconciled) + 1; // the last one

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

// Shadow mode (routes[].idempotency.mode: shadow): every request is forwarded as if unguarded,
// reserve/complete still run, and this says what enforcement would have done instead.
enum class shadow_finding {
    none,           // enforcement would have forwarded it too
    would_replay,   // a finished record with the same fingerprint exists
    would_conflict, // the first request with this key is still in flight
    would_mismatch, // the key was used with another fingerprint
    would_reject,   // a 400 (key or tenant missing or invalid) or a 503 (store failure)
};
inline constexpr int shadow_finding_count = 5;
std::string_view to_string(shadow_finding f) noexcept;

// What settle does with a key whose request was forwarded as its owner (decision.hpp's phase 3).
enum class completion_action {
    record,  // keep the answer for replay
    release, // free the key so a retry really runs
    hold     // keep the key as outcome_unknown: duplicates get 409, the request is never resent
};

} // namespace idemgate::gateway
