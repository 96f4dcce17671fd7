// SPDX-License-Identifier: Apache-2.0
#include "idempotency/request_phases.hpp"

#include "forward/big_answer.hpp"
#include "forward/proxy.hpp"
#include "idempotency/classify.hpp"
#include "idempotency/probe_entry.hpp"
#include "idempotency/scope.hpp"
#include "tier/local_tier.hpp"

#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/path_normal_form.hpp>
#include <idemgate/gateway/fingerprint.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using clock_type = request_phases::clock_type;

response_type replay_response(store::stored_response&& stored, unsigned version,
                              const std::vector<std::string>& drop)
{
    response_type res{http::int_to_status(stored.status), version};
    if (!stored.reason.empty())
        res.reason(stored.reason);
    // Only the record of a HEAD answer keeps a Content-Length (settle): the body it counts was
    // never sent, so it is replayed as recorded rather than set to the empty body's length.
    bool head_answer = false;
    for (auto& h : stored.headers) {
        if (boost::beast::iequals(h.name, "Content-Length"))
            head_answer = true;
        if (!dropped_from_replay(h.name, drop))
            res.insert(h.name, h.value);
    }
    res.set("Idempotent-Replayed", "true");
    res.body() = std::move(stored.body);
    reframe(res, head_answer);
    return res;
}

boost::system::error_code account(metrics& stats, store_op op, clock_type::time_point started,
                                  boost::system::error_code ec)
{
    stats.store_latency[static_cast<int>(op)].observe(clock_type::now() - started);
    if (ec)
        stats.store_errors[static_cast<int>(op)].fetch_add(1, std::memory_order_relaxed);
    return ec;
}

request_phases::request_phases(gateway_context& ctx, worker& w, request_exchange& ex)
    : ctx_(ctx), w_(w), ex_(ex), env_(*ex.env), req_(*ex.req), client_(*ex.client),
      trace_(ex.trace_or_null()), version_(ex.req->version()), h_(ex.answer)
{
}

boost::system::error_code request_phases::account(store_op op, clock_type::time_point started,
                                                  boost::system::error_code ec)
{
    detail::account(ctx_.stats, op, started, ec);
    if (trace_ && trace_->sampled) {
        std::string_view operation = boost::describe::enum_to_string(op, "");
        tracing::span child;
        child.name = "idemgate.store " + std::string(operation);
        child.kind = tracing::span_kind::client;
        child.error = static_cast<bool>(ec);
        child.attributes = {{"db.system", std::string(ctx_.backend->kind())},
                            {"idemgate.store.operation", std::string(operation)}};
        if (ec)
            child.attributes.push_back({"error.type", ec.message()});
        trace_->add_child(std::move(child), started);
    }
    return ec;
}

std::string original_location(const store::record& first)
{
    if (first.state != store::record_state::completed && first.state != store::record_state::status_only &&
        first.state != store::record_state::tombstone)
        return {};
    for (const auto& h : first.response.headers)
        if (boost::beast::iequals(h.name, "Location"))
            return h.value;
    return {};
}

refused about_first(refusal reason, const store::record& first)
{
    refused r{reason};
    r.location = original_location(first);
    r.original_status = first.response.status;
    r.original_time = rfc3339_utc(first.created_unix_ms);
    return r;
}

phase_result request_phases::refuse(refused r)
{
    refusal_ = std::move(r);
    return phase_result::respond;
}

phase_result request_phases::classify()
{
    // A client lookup path wins over the routes; the lookup runs in its route's scope.
    std::string_view lookup_key;
    if ((route_ = lookup_route(env_.cfg(), req_.target(), lookup_key))) {
        lookup_ = true;
        normal_target_ = req_.target(); // a lookup path is matched as spelled
        if (auto rejection = classify_lookup(*route_, ex_, lookup_key, cls_))
            return refuse(std::move(*rejection));
        return phase_result::next;
    }
    // Routes and fingerprints see the path's normal form, so that no spelling of a guarded path
    // ("/api//orders", "/api/%6Frders") slips past its route; the upstream gets the client's.
    auto normal = normalize_target(req_.target(), target_storage_);
    if (normal.problem != path_problem::none)
        return refuse({refusal::invalid_path, describe(normal.problem, normal.offset)});
    normal_target_ = normal.target;
    route_ = match_route(env_.cfg(), normal.path);
    if (!route_)
        return refuse({refusal::no_route});
    shadow_ = policy().mode == config::route_mode::shadow;
    if (shadow_)
        shadow_stats_ = &env_.live->route_stats_of(route_ - env_.cfg().routes.data());
    if (auto rejection = classify_request(*route_, req_, client_, cls_)) {
        // Shadow mode changes nothing the client sees: a request enforcement would refuse for its
        // key or tenant is forwarded, and the refusal is only counted.
        if (!shadow_ || shadow_after_classify(cls_.verdict) != shadow_finding::would_reject)
            return refuse(std::move(*rejection));
        h_.shadow = shadow_finding::would_reject;
        cls_.verdict = request_verdict::pass_through;
    }
    if (cls_.verdict != request_verdict::pass_through)
        return phase_result::next;
    h_.key_state = key_status::ignored; // told only when a key came
    if (h_.shadow != shadow_finding::none)
        ctx_.stats.shadow[static_cast<int>(h_.shadow)].fetch_add(1, std::memory_order_relaxed);
    return phase_result::pass_through;
}

phase_result request_phases::scope()
{
    // Copies: forwarding may erase header lines these views point into.
    h_.key = std::string(cls_.facts.key);
    h_.tenant = std::string(cls_.facts.tenant);
    auto resolved = resolve_scope(request_scope_source(*route_, h_.tenant, req_), ctx_.boot.store.key_secret);
    scope_tenant_ = std::move(resolved.tenant);
    h_.principal = std::move(resolved.principal);
    scope_ = store::scope{scope_tenant_, h_.key};
    in_flight_.state = store::record_state::in_flight;
    std::string decoded;
    auto body = fingerprint_body(req_, policy().fingerprint, env_.cfg().limits.max_request_body, decoded);
    if (!body)
        return refuse({refusal::decoded_body_too_large});
    in_flight_.fingerprint =
        fingerprint({req_.method_string(), normal_target_, *body}, policy().fingerprint, req_);
    return phase_result::next;
}

phase_result request_phases::tier_lookup()
{
    tier_ = shadow_ ? nullptr : w_.tier.get();
    if (!tier_)
        return phase_result::next;
    record_id_ = ctx_.backend->record_id(scope_);
    auto copy = tier_->find(record_id_, clock_type::now());
    if (!copy || copy->fingerprint != in_flight_.fingerprint)
        return phase_result::next;
    h_.response.result(copy->record.status); // for the access log; the bytes come from the copy
    h_.prerendered = std::move(copy);
    h_.result = outcome::replayed;
    h_.key_state = key_status::replayed;
    return phase_result::respond;
}

asio::awaitable<phase_result> request_phases::reserve()
{
    // Only a request that goes to the store needs an owner token and its tenant's limits.
    in_flight_.owner_token = w_.new_owner_token();
    in_flight_.created_unix_ms = log::now_unix_ms();
    tenant_ = resolve_tenant_policy(env_.cfg(), policy(), h_.tenant);
    if (shadow_)
        shadow_stats_->count_shadow(store::shadow_figure::keyed);
    auto t0 = clock_type::now();
    store::reserve_result reserved = co_await reserve_or_read();
    if (account(store_op::reserve, t0, reserved.ec))
        log::coalesced(log::level::warn, "store reserve failed", reserved.ec.message(),
                       {{"error", reserved.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}}, 1000);

    const auto on_failure = ctx_.boot.store.on_failure;
    auto action =
        decide_after_reserve(reserved, in_flight_.fingerprint, reserve_rules_of(policy(), on_failure));
    if (action == reserve_action::observe) {
        // What enforcement would have answered is counted; the request runs as if unguarded,
        // and the record (if any) is left as it is.
        h_.shadow = shadow_after_reserve(decide_after_reserve(reserved, in_flight_.fingerprint, on_failure));
        if (h_.shadow != shadow_finding::none)
            ctx_.stats.shadow[static_cast<int>(h_.shadow)].fetch_add(1, std::memory_order_relaxed);
        if (reserved.ec)
            ctx_.stats.store_bypassed.fetch_add(1, std::memory_order_relaxed);
        observe_shadow(reserved);
        h_.key_state = key_status::ignored;
        co_return phase_result::pass_through;
    }
    if (shadow_ && policy().tombstone_ttl.count() > 0) // the key was free: was it retried too late?
        co_await shadow_look_back();
    if (action == reserve_action::wait_for_first) {
        auto waited = co_await wait_for_first(reserved.existing);
        if (!waited)
            co_return refuse({refusal::too_many_waiting});
        action = *waited;
    }
    if (action == reserve_action::look_for_tombstone) {
        auto found = co_await find_tombstone();
        if (found.ec)
            log::coalesced(log::level::warn, "store could not look for a tombstone", found.ec.message(),
                           {{"error", found.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}}, 1000);
        action = decide_after_tombstone(found, in_flight_.fingerprint, on_failure);
        if (action != reserve_action::forward_and_record) {
            // Not executed: the key is freed again as it was.
            auto t1 = clock_type::now();
            auto ec = co_await w_.store->release(scope_, in_flight_.owner_token);
            account(store_op::release, t1, ec);
            reserved.existing = std::move(found.tombstone);
        }
    }
    switch (action) {
    case reserve_action::replay: co_return replay(std::move(*reserved.existing));
    case reserve_action::not_replayable:
        co_return refuse(about_first(refusal::not_replayable, *reserved.existing));
    case reserve_action::record_expired:
        co_return refuse(about_first(refusal::record_expired, *reserved.existing));
    case reserve_action::in_flight_conflict: co_return refuse({refusal::in_flight});
    case reserve_action::released_conflict: co_return refuse({refusal::released});
    case reserve_action::outcome_unknown: co_return refuse({refusal::outcome_unknown});
    case reserve_action::fingerprint_mismatch:
        co_return refuse({refusal::mismatch, {}, 0, original_location(*reserved.existing)});
    case reserve_action::reject_store_failure: co_return refuse_store_failure(reserved.ec);
    case reserve_action::pass_through_store_failure:
        ctx_.stats.store_bypassed.fetch_add(1, std::memory_order_relaxed);
        h_.key_state = key_status::unavailable;
        co_return phase_result::pass_through;
    case reserve_action::forward_and_record: break;
    case reserve_action::observe:
    case reserve_action::wait_for_first:
    case reserve_action::look_for_tombstone: break; // taken above
    }
    co_return phase_result::next;
}

// Which 503: a full store says when to retry, a store that refuses writes says so; a plain
// function, so its refusal is not one more object in reserve's coroutine frame.
phase_result request_phases::refuse_store_failure(boost::system::error_code ec)
{
    if (ec == error::store_full)
        return refuse({refusal::store_full, {}, ctx_.backend->full_retry_after().count()});
    return refuse({read_only_ && !ec ? refusal::store_refusing : refusal::store_unavailable});
}

asio::awaitable<store::reserve_result> request_phases::reserve_or_read()
{
    if (ctx_.backend->refusing())
        return read_while_refusing();
    return w_.store->reserve(scope_, in_flight_, tenant_.lock_ttl);
}

// A finished record with this request's fingerprint: its answer, and (tier on) a copy for the
// local tier, which a replay read from the store is what admits.
phase_result request_phases::replay(store::record&& existing)
{
    // A record a probe completed (reconcile) is replayed as reconciled, and only from the store.
    auto& fields = existing.response.headers;
    auto marker = std::find_if(fields.begin(), fields.end(),
                               [](const store::header_field& f) { return f.name == reconciled_field; });
    bool reconciled = marker != fields.end();
    if (reconciled)
        fields.erase(marker);
    h_.response = replay_response(std::move(existing.response), version_, policy().replay_drop_headers);
    h_.result = reconciled ? outcome::reconciled : outcome::replayed;
    h_.key_state = reconciled ? key_status::reconciled : key_status::replayed;
    if (tier_ && !reconciled) {
        // The store's TTL started when the record was completed, after it was created.
        auto now = clock_type::now();
        auto left = std::chrono::milliseconds(existing.created_unix_ms + tenant_.record_ttl.count() -
                                              log::now_unix_ms());
        tier_->insert({std::move(record_id_), std::move(existing.fingerprint), now + left}, h_.response, now);
    }
    return phase_result::respond;
}

asio::awaitable<phase_result> request_phases::admit()
{
    store::admit_result adm;
    adm.ec = make_error_code(error::store_unavailable);
    if (auto* quotas = w_.store->quotas())
        adm = co_await quotas->admit(h_.tenant, in_flight_.owner_token, tenant_.limits, tenant_.lock_ttl);
    if (adm.ec) {
        ctx_.stats.tenant_quota_errors.fetch_add(1, std::memory_order_relaxed);
        log::coalesced(log::level::warn, "store could not check the tenant quota", adm.ec.message(),
                       {{"error", adm.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}}, 1000);
    }
    auto action = decide_after_admit(adm, ctx_.boot.store.on_failure);
    if (action == quota_action::forward) {
        admitted_ = !adm.ec;
        co_return phase_result::next;
    }
    // The key was reserved for nothing: free it so the client's retry can run.
    auto t1 = clock_type::now();
    auto ec = co_await w_.store->release(scope_, in_flight_.owner_token);
    account(store_op::release, t1, ec);
    if (action == quota_action::reject_store_failure)
        co_return refuse({refusal::quota_unavailable});
    bool in_flight_limit = adm.verdict == store::admission::too_many_in_flight;
    ctx_.stats.tenant_throttled[in_flight_limit ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
    co_return refuse({in_flight_limit ? refusal::tenant_in_flight_limit : refusal::tenant_key_rate,
                      {},
                      static_cast<long long>(adm.retry_after.count())});
}

asio::awaitable<void> request_phases::number_attempt()
{
    const auto& header = policy().attempt_header;
    req_.erase(header); // only the gateway says which execution this is
    // Kept as long as a retry of this key could still execute after a release.
    store::count_result counted;
    counted.ec = make_error_code(error::store_unavailable);
    if (auto* attempts = w_.store->attempts())
        counted = co_await attempts->count_execution(scope_, tenant_.lock_ttl + tenant_.record_ttl);
    if (counted.ec) {
        log::coalesced(log::level::warn,
                       "store could not count the key's executions; forwarded without the attempt header",
                       counted.ec.message(),
                       {{"error", counted.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}}, 1000);
        co_return;
    }
    req_.set(header, std::to_string(counted.count));
    attempt_ = counted.count;
}

void request_phases::announce_big_answer()
{
    if (!route_ || !tells_key_status())
        return;
    if (h_.result == outcome::executed) {
        auto completion = decide_after_upstream({true, h_.big->head.status, true},
                                                policy().on_unknown_outcome, policy().on_status);
        h_.key_state = status_after_settle(completion, true);
    }
    if (h_.key_state != key_status::none)
        h_.status_header = policy().status_header;
}

std::unique_ptr<lock_keeper> request_phases::keep_lock()
{
    return std::make_unique<lock_keeper>(
        w_.ioc.get_executor(), *w_.store,
        lock_keeper::held_lock{scope_tenant_, h_.key, in_flight_.owner_token, tenant_.lock_ttl});
}

void request_phases::finish_answer()
{
    if (refusal_)
        render_refusal(h_, *refusal_,
                       {env_.cfg().problems.type_base(), version_, route_ ? policy().mismatch_status : 0u});
    else if (shadow_)
        h_.key_state = key_status::ignored; // shadow mode changes nothing the client sees
    if (route_ && tells_key_status() && h_.key_state != key_status::none)
        h_.status_header = policy().status_header;
}

bool request_phases::tells_key_status() const
{
    // A key came, or the route takes keys from the body and guards this method: the client may
    // believe its body carried one, so it is told that none was found (ignored).
    return cls_.facts.key_count > 0 ||
           (policy().key_from != config::key_source::header && guards_method(policy(), req_.method_string()));
}

} // namespace idemgate::gateway::detail
