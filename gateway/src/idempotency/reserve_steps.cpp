// SPDX-License-Identifier: Apache-2.0
// The reserve phase's steps off its usual path (request_phases.hpp): the read that stands in for
// the reservation while the store refuses writes, a tombstone's look-up, the wait of wait mode.
#include "idempotency/request_phases.hpp"

#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;

namespace {

asio::awaitable<store::tombstone_result> no_tombstones()
{
    store::tombstone_result out;
    out.ec = make_error_code(error::store_unavailable);
    co_return out;
}

} // namespace

asio::awaitable<store::tombstone_result> request_phases::find_tombstone()
{
    if (auto* tombstones = w_.store->tombstones())
        return tombstones->find_tombstone(scope_);
    return no_tombstones();
}

// A key that holds a record is answered as ever (a replay, a conflict); a free one comes back
// neither acquired nor held, which the decision treats as a store failure (on_failure).
asio::awaitable<store::reserve_result> request_phases::read_while_refusing()
{
    read_only_ = true;
    store::lookup_result found = co_await w_.store->lookup(scope_);
    store::reserve_result out;
    out.ec = found.ec;
    out.existing = std::move(found.existing);
    co_return out;
}

// Wait mode: a duplicate of an in-flight request waits for the first one to settle, within
// limits.max_waiting per process. Returns what to answer then, or nothing when too many wait
// already; `existing` gets the record to replay.
asio::awaitable<std::optional<reserve_action>>
request_phases::wait_for_first(std::optional<store::record>& existing)
{
    auto& stats = ctx_.stats;
    if (stats.waiting.fetch_add(1, std::memory_order_relaxed) >=
        static_cast<std::int64_t>(env_.cfg().limits.max_waiting)) {
        stats.waiting.fetch_sub(1, std::memory_order_relaxed);
        stats.waits[static_cast<int>(wait_end::refused)].fetch_add(1, std::memory_order_relaxed);
        co_return std::nullopt;
    }
    store::wait_result waited;
    waited.ec = make_error_code(error::store_unavailable);
    if (auto* waits = w_.store->waits())
        waited = co_await waits->wait_settled(scope_, policy().wait_timeout);
    stats.waiting.fetch_sub(1, std::memory_order_relaxed);
    if (waited.ec)
        log::coalesced(log::level::warn, "store failed while a duplicate waited; answered 409",
                       waited.ec.message(), {{"error", waited.ec.message()}}, 1000);
    auto action = decide_after_wait(waited, in_flight_.fingerprint);
    auto end = waited.ec || waited.timed_out                 ? wait_end::timed_out
               : action == reserve_action::released_conflict ? wait_end::released
                                                             : wait_end::settled;
    stats.waits[static_cast<int>(end)].fetch_add(1, std::memory_order_relaxed);
    if (trace_) {
        trace_->add_event("idemgate.wait",
                          {{"idemgate.wait.result", std::string(boost::describe::enum_to_string(end, ""))}});
    }
    existing = std::move(waited.existing);
    co_return action;
}

} // namespace idemgate::gateway::detail
