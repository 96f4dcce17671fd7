// SPDX-License-Identifier: Apache-2.0
#pragma once
// One request through the idempotency filter, as named phases of one per-request object:
//
//   classify -> scope -> tier_lookup -> reserve -> admit -> (forward) -> settle -> finish_answer
//
// Each phase either lets the request go on, sends it upstream unguarded, or has its answer
// ready (a replay, or a refusal from the table in <idemgate/gateway/refusal.hpp>).
// handle_request (idempotency_filter.cpp) runs the phases in this order and is the one place a
// request is forwarded; settle runs only after a request forwarded as its key's owner.
#include "core/request_exchange.hpp"
#include "idempotency/classify.hpp"
#include "idempotency/refusal.hpp"
#include "observability/request_trace.hpp"
#include "state/worker.hpp"

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <memory>
#include <optional>
#include <string>

namespace idemgate::gateway::detail {

// What a phase decided.
enum class phase_result {
    next,         // go on; after admit: forward as the key's owner, then settle
    pass_through, // forward unguarded: no key held, nothing recorded
    respond       // the answer is ready (a replay or a refusal): nothing goes upstream
};

class lock_keeper; // idempotency/big_answer.hpp

class request_phases {
public:
    using clock_type = std::chrono::steady_clock;

    // The answer goes into `ex.answer`; with a trace (tracing on), store operations become its spans.
    request_phases(gateway_context& ctx, worker& w, request_exchange& ex);
    request_phases(const request_phases&) = delete;
    request_phases& operator=(const request_phases&) = delete;

    // The route, and whether the request is guarded, unguarded, or refused before the store. A
    // shadow route forwards what enforcement would refuse, and counts it.
    phase_result classify();
    // A guarded request's key, tenant and principal, the scope the store sees, its fingerprint.
    phase_result scope();
    // A fresh copy of the finished record in this thread's local tier answers without a store
    // round trip. Shadow routes never replay, so they never look.
    phase_result tier_lookup();
    // Takes the key, or learns what the store holds under it: a replay, a refusal (after waiting
    // in wait mode), or a pass-through (shadow routes; a store failure with pass_through).
    boost::asio::awaitable<phase_result> reserve();
    // A limited tenant's quotas for the new key; a refusal frees the key. Run only where
    // admission_needed() (a limited tenant on an enforcing route): most tenants are unlimited,
    // and an admit with nothing to do would still cost a coroutine frame.
    bool admission_needed() const noexcept { return tenant_.limited && !shadow_; }
    boost::asio::awaitable<phase_result> admit();
    // After forwarding as the key's owner (`answered`: the upstream answered): records the answer
    // for replay, or releases or holds the key; then leaves the tenant's quota.
    boost::asio::awaitable<void> settle(bool answered);
    // A client lookup (classify found the route by its client_lookup_path): what the store holds
    // under the caller's scope (its tombstone when the record expired); nothing is reserved or
    // executed. Nothing when the store failed: the answer is then the refusal.
    bool client_lookup_request() const noexcept { return lookup_; }
    boost::asio::awaitable<std::optional<store::lookup_result>> client_lookup();
    // The route's attempt_header (set): the key's execution number, counted in the store, on the
    // request about to be forwarded as the key's owner.
    bool numbers_attempts() const noexcept { return !policy().attempt_header.empty(); }
    boost::asio::awaitable<void> number_attempt();
    // A shadow route's duplicate of a finished (or held) first request was forwarded: what its
    // answer says next to the first one's, for the shadow report (`answered`: the upstream
    // answered). The rest of the report is counted by reserve (shadow_report.cpp).
    bool compares_answer() const noexcept { return shadow_first_ != nullptr; }
    void shadow_answered(bool answered);
    // Before a big answer's head is written (h.big): what its status header will say.
    void announce_big_answer();
    // While a big answer is passed on by the key's owner: its lock kept past lock_ttl.
    std::unique_ptr<lock_keeper> keep_lock();
    // The answer made final: a refusal rendered from its row, what the client is told of its key.
    // The last phase.
    void finish_answer();

    const config::route_config& route() const noexcept { return *route_; }
    bool routed() const noexcept { return route_ != nullptr; }
    handled& answer() noexcept { return h_; }

private:
    const config::idempotency_config& policy() const noexcept { return route_->idempotency; }
    // Whether the answer carries the route's status header (routes[].idempotency.status_header).
    bool tells_key_status() const;
    // account() for this request, and its store operation as a client span when traced.
    boost::system::error_code account(store_op op, clock_type::time_point started,
                                      boost::system::error_code ec);
    phase_result refuse(refused r);
    boost::asio::awaitable<std::optional<reserve_action>>
    wait_for_first(std::optional<store::record>& existing);
    // The store's reserve, or while the store refuses writes (store::backend::refusing) a read of
    // what the key holds: nothing is reserved, so a new key is refused before anything runs. A
    // plain function, so the usual path awaits the store's coroutine with no frame of its own.
    boost::asio::awaitable<store::reserve_result> reserve_or_read();
    boost::asio::awaitable<store::reserve_result> read_while_refusing();
    // The key's tombstone, or store_unavailable from a store that keeps none (the configuration
    // check refuses a route with tombstones on it). A plain function, so that reserve awaits
    // the store's coroutine straight into its own variable: a second result in reserve's frame
    // made it too large for Asio to recycle.
    boost::asio::awaitable<store::tombstone_result> find_tombstone();
    phase_result refuse_store_failure(boost::system::error_code ec);
    phase_result replay(store::record&& existing);
    store::record completed_record();
    // After `done` was recorded: its tombstone (routes[].idempotency.tombstone_ttl).
    boost::asio::awaitable<void> bury(const store::record& done, std::chrono::milliseconds record_ttl);
    // Shadow mode: what reserve found, counted for the shadow report; a duplicate of a finished
    // first request keeps that record for shadow_answered. Plain, so reserve's frame stays small.
    void observe_shadow(store::reserve_result& reserved);
    // Shadow mode with tombstone_ttl: a new key's tombstone says it was retried after record_ttl.
    boost::asio::awaitable<void> shadow_look_back();
    // A key just held on a route that reconciles: its probe goes on the store's schedule.
    boost::asio::awaitable<void> schedule_probe(std::chrono::milliseconds record_ttl);
    // A key just held: it goes on the store's index of held keys (the admin API lists it), and on
    // a route that reconciles its probe goes on the schedule (schedule_probe).
    boost::asio::awaitable<void> list_held(std::chrono::milliseconds record_ttl);

    gateway_context& ctx_;
    worker& w_;
    const request_exchange& ex_;
    const request_env& env_;
    request_type& req_;
    const client_info& client_;
    request_trace* trace_;
    const unsigned version_; // the client's: forwarding rewrites the request's to HTTP/1.1

    const config::route_config* route_ = nullptr;
    // The target with its path in normal form (routes and the fingerprint): a view of the
    // request's own target when it was normal, else of target_storage_.
    std::string_view normal_target_;
    std::string target_storage_;
    bool shadow_ = false;
    route_counters* shadow_stats_ = nullptr;      // shadow routes: the route's counters
    std::unique_ptr<store::record> shadow_first_; // shadow duplicates: the first request's record
    classification cls_;                          // what classify found: facts, verdict, the key's storage
    bool lookup_ = false;
    handled& h_;
    std::optional<refused> refusal_;

    std::string scope_tenant_;
    store::scope scope_;      // views into scope_tenant_ and h_.key
    store::record in_flight_; // what reserve writes; settle moves its token and fingerprint on
    local_tier* tier_ = nullptr;
    std::string record_id_; // the local tier's name of the record (tier on)
    tenant_policy tenant_;
    bool admitted_ = false;     // admit counted the key in its tenant's quota: settle leaves it
    bool read_only_ = false;    // the store refused writes: reserve only read the key
    std::uint64_t attempt_ = 0; // the execution's number when the route counts them (attempt_header)
};

// A recorded answer as a replay: its status, reason and fields but Date and those matching
// `drop` (routes[].idempotency.replay_drop_headers), Idempotent-Replayed, its body. The answer
// gets a fresh Date when it is written.
response_type replay_response(store::stored_response&& stored, unsigned version,
                              const std::vector<std::string>& drop);

// The Location of a completed record's answer (or a status-only record's, or a tombstone's), or
// "" (none, or no answer).
std::string original_location(const store::record& first);

// A refusal about the first request with a key (not_replayable, record_expired): its Location,
// status and time.
refused about_first(refusal reason, const store::record& first);

// The bookkeeping of a finished store operation: its latency, and its failure if any.
boost::system::error_code account(metrics& stats, store_op op, std::chrono::steady_clock::time_point started,
                                  boost::system::error_code ec);

} // namespace idemgate::gateway::detail
