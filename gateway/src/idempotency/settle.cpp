// SPDX-License-Identifier: Apache-2.0
// The settle phase: the upstream answered (or did not) a request forwarded as its key's owner;
// keep the answer for replay, or free or hold the key.
#include "core/http_date.hpp"
#include "forward/big_answer.hpp"
#include "forward/proxy.hpp"
#include "idempotency/held_note.hpp"
#include "idempotency/probe_entry.hpp"
#include "idempotency/request_phases.hpp"
#include "tier/local_tier.hpp"

#include <boost/beast/core/string.hpp>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/store/held_index.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using clock_type = request_phases::clock_type;

// The record of a settled answer: the reservation's fingerprint, token and creation time, and
// the answer's status, reason, recordable fields and body (moved out of the answer).
// An answer too large to record (h_.big) keeps a status-only record instead: the upstream's
// status, reason and fields, the body's length (the announced one when it was refused) and
// SHA-256 (when it was read to its end).
store::record request_phases::completed_record()
{
    store::record done;
    done.state = store::record_state::completed;
    done.fingerprint = std::move(in_flight_.fingerprint);
    done.owner_token = std::move(in_flight_.owner_token);
    done.created_unix_ms = in_flight_.created_unix_ms;
    if (const auto* big = h_.big.get()) {
        done.state = store::record_state::status_only;
        done.response = big->head;
        done.body_length = big->rest || big->passed > 0 || !big->length ? big->passed : *big->length;
        done.body_sha256 = big->sha256;
        return done;
    }
    done.response = recordable_head(h_.response, env_.cfg().request_id_header, policy().status_header);
    // A HEAD answer has no body to measure: its Content-Length is the one a GET would get (RFC
    // 9110 9.3.2), kept so that the replay says the same (replay_response keeps it).
    if (req_.method() == http::verb::head)
        if (auto it = h_.response.find(http::field::content_length); it != h_.response.end())
            done.response.headers.push_back({"Content-Length", std::string(it->value())});
    // Move the body into the record and back after complete: no copy of the body on the hot path.
    done.response.body = std::move(h_.response.body());
    return done;
}

// What outlives a record for tombstone_ttl: its fingerprint, time, status, Location and the
// body's length and SHA-256.
static store::record tombstone_of(const store::record& done)
{
    store::record tomb;
    tomb.state = store::record_state::tombstone;
    tomb.fingerprint = done.fingerprint;
    tomb.created_unix_ms = done.created_unix_ms;
    tomb.response.status = done.response.status;
    tomb.response.reason = done.response.reason;
    for (const auto& f : done.response.headers)
        if (boost::beast::iequals(f.name, "Location"))
            tomb.response.headers.push_back(f);
    if (done.state == store::record_state::completed) {
        tomb.body_length = done.response.body.size();
        tomb.body_sha256 = sha256_hex(done.response.body);
    } else {
        tomb.body_length = done.body_length;
        tomb.body_sha256 = done.body_sha256;
    }
    return tomb;
}

asio::awaitable<void> request_phases::schedule_probe(std::chrono::milliseconds record_ttl)
{
    const auto& rc = policy().reconcile;
    auto target = render_probe_target(rc.path, h_.key, h_.tenant, req_.body());
    if (!target) {
        log::warn("reconcile: the held request's body has no field the probe's path names; not probed",
                  {{"tenant", h_.tenant}, {"key", h_.key}, {"path", rc.path}});
        co_return;
    }
    probe_entry p{route_->path_prefix,
                  h_.tenant,
                  scope_tenant_,
                  h_.key,
                  in_flight_.owner_token,
                  in_flight_.fingerprint,
                  in_flight_.created_unix_ms,
                  log::now_unix_ms(),
                  record_ttl.count(),
                  std::move(*target)};
    // A reconciling route's store keeps probes (the configuration check matched them).
    auto* schedule = w_.store->probes();
    boost::system::error_code ec = make_error_code(error::store_unavailable);
    if (schedule)
        ec = co_await schedule->schedule_probe(encode_probe(p), p.held_unix_ms + rc.after.count());
    if (ec)
        log::coalesced(log::level::warn, "reconcile: store could not schedule a held key's probe",
                       ec.message(), {{"error", ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}}, 1000);
}

asio::awaitable<void> request_phases::list_held(std::chrono::milliseconds record_ttl)
{
    held_note note{route_->path_prefix, log::now_unix_ms(), attempt_, h_.principal,
                   policy().key_space == config::key_space_mode::route};
    // A route that holds keys has a store with the index (the configuration check matched them).
    auto* index = w_.store->held();
    boost::system::error_code ec = make_error_code(error::store_unavailable);
    if (index) {
        const auto label = held_label(scope_tenant_);
        const auto text = encode_held_note(note);
        const store::held_text entry{label, in_flight_.owner_token, text, record_ttl};
        ec = co_await index->list_held(scope_, entry);
    }
    if (ec)
        log::coalesced(log::level::warn,
                       "store could not list a held key; the admin API's list of held keys misses it",
                       ec.message(), {{"error", ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}}, 1000);
    if (policy().reconcile.enabled())
        co_await schedule_probe(record_ttl);
}

// Its own coroutine: the tombstone would otherwise sit in settle's frame on every request.
asio::awaitable<void> request_phases::bury(const store::record& done, std::chrono::milliseconds record_ttl)
{
    auto tomb = tombstone_of(done);
    auto* tombstones = w_.store->tombstones();
    boost::system::error_code ec = make_error_code(error::store_unavailable);
    if (tombstones)
        ec = co_await tombstones->bury(scope_, tomb, record_ttl + policy().tombstone_ttl);
    if (ec)
        log::coalesced(log::level::warn,
                       "store could not keep a tombstone; a retry after record_ttl will execute",
                       ec.message(), {{"error", ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}}, 1000);
}

asio::awaitable<void> request_phases::settle(bool answered)
{
    const auto record_ttl = tenant_.record_ttl;
    // The quota is left with the reservation's token, which the record takes: keep a copy.
    std::string token = admitted_ ? in_flight_.owner_token : std::string();
    // A big answer, or one that began and could not be read, is judged by the upstream's status
    // (the client may have got a 502 instead): its status line arrived, so the upstream ran the
    // request, even when its body broke off later.
    const auto* big = h_.big.get();
    const unsigned status = big ? big->head.status : h_.response.result_int();
    auto completion = decide_after_upstream({answered, status, h_.request_sent}, policy().on_unknown_outcome,
                                            policy().on_status);
    if (answered)
        ctx_.stats.upstream_outcomes[upstream_outcome_index(completion, status)].fetch_add(
            1, std::memory_order_relaxed);
    bool store_ok = true;
    if (completion == completion_action::hold) {
        // The upstream may have run it: never send it again. The key stays held for record_ttl.
        h_.result = outcome::held;
        in_flight_.state = store::record_state::outcome_unknown;
        if (trace_)
            trace_->add_event("idemgate.hold", {{"idemgate.upstream_answered", answered}});
        auto t1 = clock_type::now();
        auto ec = co_await w_.store->complete(scope_, in_flight_, record_ttl);
        account(store_op::complete, t1, ec);
        store_ok = !ec;
        if (!ec)
            co_await list_held(record_ttl);
        if (ec) {
            log::coalesced(log::level::warn,
                           "store could not hold a key whose outcome is unknown; it is released by lock_ttl",
                           ec.message(), {{"error", ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}},
                           1000);
        } else if (answered) {
            log::warn("outcome unknown: the upstream answered with a status on_status holds; the key is held",
                      {{"tenant", h_.tenant},
                       {"key", h_.key},
                       {"status", static_cast<std::int64_t>(status)},
                       {"record_ttl_ms", record_ttl.count()}});
        } else {
            log::warn("outcome unknown: the request was sent upstream and no answer came; the key is held",
                      {{"tenant", h_.tenant}, {"key", h_.key}, {"record_ttl_ms", record_ttl.count()}});
        }
    } else if (completion == completion_action::release) {
        h_.result = outcome::released;
        auto t1 = clock_type::now();
        auto ec = co_await w_.store->release(scope_, in_flight_.owner_token);
        account(store_op::release, t1, ec);
        if (ec) {
            log::coalesced(log::level::warn, "store release failed; the key stays locked until lock_ttl",
                           ec.message(), {{"error", ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}},
                           1000);
        }
    } else {
        // The expiry header is part of the recorded answer, so every replay carries the same
        // value. The store's TTL starts at complete, a moment later: the header is never later
        // than the truth.
        if (policy().expose_expiry && !big)
            h_.response.set("Idempotency-Expires", http_date(log::now_unix_ms() + record_ttl.count()));
        store::record done = completed_record();
        auto t1 = clock_type::now();
        auto ec = co_await w_.store->complete(scope_, done, record_ttl);
        account(store_op::complete, t1, ec);
        if (!ec && policy().tombstone_ttl.count() > 0)
            co_await bury(done, record_ttl);
        // By default a record enters the tier only once a replay reads it from the store: most
        // keys are never retried, and copying every new record (rendering it, evicting an older
        // copy from cold memory) costs every first execution and pushes replayed copies out.
        if (!ec && tier_ && !big && ctx_.boot.store.local_tier.admit == config::tier_admission::complete) {
            // A copy: the body goes back to the client's answer. The store's TTL starts a moment
            // after this: the copy expires first.
            auto now = clock_type::now();
            tier_->insert({std::move(record_id_), std::move(done.fingerprint), now + record_ttl},
                          replay_response(store::stored_response(done.response), version_,
                                          policy().replay_drop_headers),
                          now);
        }
        if (!big)
            h_.response.body() = std::move(done.response.body);
        store_ok = !ec;
        if (ec) {
            ctx_.stats.records_lost.fetch_add(1, std::memory_order_relaxed);
            log::coalesced(log::level::warn, "store complete failed; the response was sent but not recorded",
                           ec.message(), {{"error", ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}},
                           1000);
            if (!h_.written)
                h_.response.erase("Idempotency-Expires"); // nothing will be replayed
        }
    }
    h_.key_state = status_after_settle(completion, store_ok);
    if (!store_ok)
        h_.result = outcome::released; // nothing recorded or held: the key frees at lock_ttl
    if (admitted_) {                   // admitted: the store keeps quotas
        if (auto* quotas = w_.store->quotas()) {
            auto ec = co_await quotas->leave(h_.tenant, token);
            if (ec)
                ctx_.stats.tenant_quota_errors.fetch_add(1, std::memory_order_relaxed);
        }
    }
}

} // namespace idemgate::gateway::detail
