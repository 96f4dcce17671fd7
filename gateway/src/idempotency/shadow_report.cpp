// SPDX-License-Identifier: Apache-2.0
// The shadow report: what a shadow route's request found (request_phases' shadow steps) and the
// flush of the process's counts to the store.
#include "idempotency/shadow_report.hpp"

#include "forward/big_answer.hpp"
#include "idempotency/request_phases.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using store::shadow_figure;

void request_phases::observe_shadow(store::reserve_result& reserved)
{
    if (!reserved.existing)
        return; // a store failure: nothing is known
    auto& first = *reserved.existing;
    if (first.fingerprint != in_flight_.fingerprint)
        shadow_stats_->count_shadow(shadow_figure::reuse);
    else if (first.state == store::record_state::in_flight)
        shadow_stats_->count_shadow(shadow_figure::concurrent);
    else
        shadow_first_ = std::make_unique<store::record>(std::move(first)); // compared when answered
}

asio::awaitable<void> request_phases::shadow_look_back()
{
    auto found = co_await find_tombstone();
    if (!found.tombstone)
        co_return; // none, or the store failed: not counted
    shadow_stats_->count_shadow(found.tombstone->fingerprint == in_flight_.fingerprint
                                    ? shadow_figure::after_ttl
                                    : shadow_figure::reuse);
}

void request_phases::shadow_answered(bool answered)
{
    auto first = std::move(shadow_first_);
    if (!answered)
        return; // the upstream may not have run it: not counted as executed again
    shadow_stats_->count_shadow(shadow_figure::duplicates_executed);
    if (first->state == store::record_state::outcome_unknown)
        return; // the first answer never came: nothing to compare with
    const auto* big = h_.big.get();
    const unsigned status = big ? big->head.status : h_.response.result_int();
    bool differ = status != first->response.status;
    if (!differ) {
        // The body: byte for byte against a recorded body, else by SHA-256 where both are known
        // (a status-only record keeps the digest; a big answer's is known once read to its end).
        const bool recorded = first->state == store::record_state::completed;
        if (!big && recorded)
            differ = first->response.body != h_.response.body();
        else if (!big && !first->body_sha256.empty())
            differ = sha256_hex(h_.response.body()) != first->body_sha256;
        else if (big && !big->sha256.empty()) {
            auto digest = recorded ? sha256_hex(first->response.body) : first->body_sha256;
            differ = !digest.empty() && digest != big->sha256;
        }
    }
    if (differ)
        shadow_stats_->count_shadow(shadow_figure::duplicates_differing);
}

namespace {

// Moves `sent` up to what `counted` says now; the difference is what to send. Safe against a
// flush on another thread: each takes its own part.
std::uint64_t take(const std::atomic<std::uint64_t>& counted, std::atomic<std::uint64_t>& sent)
{
    auto before = sent.load(std::memory_order_relaxed);
    for (;;) {
        auto now = counted.load(std::memory_order_relaxed);
        if (now <= before)
            return 0;
        if (sent.compare_exchange_weak(before, now, std::memory_order_relaxed))
            return now - before;
    }
}

} // namespace

asio::awaitable<void> flush_shadow_counts(gateway_context& ctx, store::session& session)
{
    auto* tally = session.shadows();
    if (!tally)
        co_return; // a store without the report has no shadow route (the configuration check)
    for (auto& [route, c] : ctx.route_stats.all()) {
        store::shadow_counts totals{};
        store::shadow_counts window{};
        bool any = false;
        for (std::size_t f = 0; f < store::shadow_figure_count; ++f) {
            totals[f] = take(c->shadow[f], c->shadow_totalled[f]);
            window[f] = take(c->shadow[f], c->shadow_windowed[f]);
            any = any || totals[f] != 0 || window[f] != 0;
        }
        if (!any)
            continue;
        auto ec = co_await tally->add_shadow_counts(route, totals, window, log::now_unix_ms());
        // What the store did not take goes with the next flush.
        for (std::size_t f = 0; f < store::shadow_figure_count; ++f) {
            c->shadow_totalled[f].fetch_sub(totals[f], std::memory_order_relaxed);
            c->shadow_windowed[f].fetch_sub(window[f], std::memory_order_relaxed);
        }
        if (ec)
            log::coalesced(log::level::warn, "store could not add to the shadow report; sent again later",
                           ec.message(), {{"error", ec.message()}, {"route", route}}, 10000);
    }
}

asio::awaitable<void> shadow_flush_loop(gateway_context& ctx, worker& w)
{
    asio::steady_timer timer(w.ioc);
    for (;;) {
        timer.expires_after(shadow_flush_interval);
        auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (ec)
            co_return;
        co_await flush_shadow_counts(ctx, *w.store);
        if (ctx.draining.load())
            co_return; // that was the last one
    }
}

} // namespace idemgate::gateway::detail
