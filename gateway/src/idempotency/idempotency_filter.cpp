#include "idempotency/idempotency_filter.hpp"

#include "idempotency/classify.hpp"
#include "idempotency/local_tier.hpp"
#include "idempotency/proxy.hpp"
#include "idempotency/refusal.hpp"
#include "idempotency/scope.hpp"

#include <boost/beast/core/string.hpp>
#include <cstdio>
#include <ctime>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/fingerprint.hpp>
#include <idemgate/gateway/http_rules.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

namespace {

response_type replay_response(store::stored_response&& stored, unsigned version)
{
    response_type res{http::int_to_status(stored.status), version};
    if (!stored.reason.empty())
        res.reason(stored.reason);
    for (auto& h : stored.headers)
        res.insert(h.name, h.value);
    res.set("Idempotent-Replayed", "true");
    res.body() = std::move(stored.body);
    reframe(res, false);
    return res;
}

// IMF-fixdate (RFC 9110 5.6.7) of a Unix time in milliseconds, rounded down to the second.
std::string http_date(std::int64_t unix_ms)
{
    std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    static constexpr const char* days[] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static constexpr const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                             "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday], tm.tm_mday,
                  months[tm.tm_mon], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
    return buf;
}

void observe(metrics& stats, store_op op, clock_type::time_point since)
{
    stats.store_latency[static_cast<int>(op)].observe(clock_type::now() - since);
}

void count_store_error(metrics& stats, store_op op)
{
    stats.store_errors[static_cast<int>(op)].fetch_add(1, std::memory_order_relaxed);
}

// The bookkeeping of every finished store operation: its latency, and its failure if any.
boost::system::error_code account(metrics& stats, store_op op, clock_type::time_point started,
                                  boost::system::error_code ec)
{
    observe(stats, op, started);
    if (ec)
        count_store_error(stats, op);
    return ec;
}

// Phase 3: the upstream answered (or did not); keep the answer for replay or free the key.
// `recorded` (local tier on): gets a copy of the response the store now holds for replay.
asio::awaitable<void> settle(gateway_context& ctx, worker& w, const request_env& env, store::scope scope,
                             store::record& in_flight, const config::idempotency_config& policy,
                             config::duration record_ttl, bool answered, handled& h,
                             std::optional<store::stored_response>* recorded)
{
    auto completion =
        decide_after_upstream(answered, h.response.result_int(), h.request_sent, policy.on_unknown_outcome);
    if (completion == completion_action::hold) {
        // The upstream may have run it: never send it again. The key stays held for record_ttl.
        h.result = outcome::upstream_error;
        in_flight.state = store::record_state::outcome_unknown;
        auto t1 = clock_type::now();
        auto ec = co_await w.store->complete(scope, in_flight, record_ttl);
        account(ctx.stats, store_op::complete, t1, ec);
        if (ec) {
            log::warn("store could not hold a key whose outcome is unknown; it is released by lock_ttl",
                      {{"error", ec.message()}, {"tenant", h.tenant}, {"key", h.key}});
        } else {
            log::warn("outcome unknown: the request was sent upstream and no answer came; the key is held",
                      {{"tenant", h.tenant}, {"key", h.key}, {"record_ttl_ms", record_ttl.count()}});
        }
        co_return;
    }
    if (completion == completion_action::release) {
        h.result = outcome::upstream_error;
        auto t1 = clock_type::now();
        auto ec = co_await w.store->release(scope, in_flight.owner_token);
        account(ctx.stats, store_op::release, t1, ec);
        if (ec) {
            log::warn("store release failed; the key stays locked until lock_ttl",
                      {{"error", ec.message()}, {"tenant", h.tenant}, {"key", h.key}});
        }
        co_return;
    }
    // The expiry header is part of the recorded answer, so every replay carries the same value.
    // The store's TTL starts at complete, a moment later: the header is never later than the truth.
    if (policy.expose_expiry)
        h.response.set("Idempotency-Expires", http_date(log::now_unix_ms() + record_ttl.count()));
    store::record done;
    done.state = store::record_state::completed;
    done.fingerprint = std::move(in_flight.fingerprint);
    done.owner_token = std::move(in_flight.owner_token);
    done.created_unix_ms = in_flight.created_unix_ms;
    done.response.status = h.response.result_int();
    done.response.reason = std::string(h.response.reason());
    // The request ID belongs to one request, not to the answer: a replay carries its own (an
    // upstream that echoes the ID would otherwise have it recorded).
    const auto& request_id_header = env.cfg().request_id_header;
    for (const auto& f : h.response)
        if (!excluded_from_record(f.name_string()) &&
            (request_id_header.empty() || !boost::beast::iequals(f.name_string(), request_id_header)))
            done.response.headers.push_back({std::string(f.name_string()), std::string(f.value())});
    // Move the body into the record and back: no copy of the body on the hot path.
    done.response.body = std::move(h.response.body());
    auto t1 = clock_type::now();
    auto ec = co_await w.store->complete(scope, done, record_ttl);
    account(ctx.stats, store_op::complete, t1, ec);
    if (recorded && !ec)
        recorded->emplace(done.response); // a copy: the body goes back to the client's answer
    h.response.body() = std::move(done.response.body);
    if (ec) {
        ctx.stats.records_lost.fetch_add(1, std::memory_order_relaxed);
        log::warn("store complete failed; the response was sent but not recorded",
                  {{"error", ec.message()}, {"tenant", h.tenant}, {"key", h.key}});
        h.response.erase("Idempotency-Expires"); // nothing will be replayed
    }
}

// Wait mode: a duplicate of an in-flight request waits for the first one to settle, within
// limits.max_waiting per process. Returns what to answer; `existing` gets the record to replay.
asio::awaitable<reserve_action>
wait_for_first(gateway_context& ctx, worker& w, store::scope scope, const config::idempotency_config& policy,
               std::string_view fingerprint, std::optional<store::record>& existing, std::size_t max_waiting)
{
    auto& stats = ctx.stats;
    if (stats.waiting.fetch_add(1, std::memory_order_relaxed) >= static_cast<std::int64_t>(max_waiting)) {
        stats.waiting.fetch_sub(1, std::memory_order_relaxed);
        stats.waits[static_cast<int>(wait_end::refused)].fetch_add(1, std::memory_order_relaxed);
        co_return reserve_action::reject_store_failure; // answered as too-many-waiting by the caller
    }
    store::wait_result waited = co_await w.store->wait_settled(scope, policy.wait_timeout);
    stats.waiting.fetch_sub(1, std::memory_order_relaxed);
    if (waited.ec)
        log::warn("store failed while a duplicate waited; answered 409", {{"error", waited.ec.message()}});
    auto action = decide_after_wait(waited, fingerprint);
    auto end = waited.ec || waited.timed_out                 ? wait_end::timed_out
               : action == reserve_action::released_conflict ? wait_end::released
                                                             : wait_end::settled;
    stats.waits[static_cast<int>(end)].fetch_add(1, std::memory_order_relaxed);
    existing = std::move(waited.existing);
    co_return action;
}

// Tenant quotas: admits a new reservation (the key is already ours) or answers 429 / 503 and
// releases the key. `admitted` says whether leave() must follow.
asio::awaitable<std::optional<handled>> admit_new_key(gateway_context& ctx, worker& w, store::scope scope,
                                                      const store::record& in_flight, const tenant_policy& tp,
                                                      handled& h, unsigned version, bool& admitted)
{
    admitted = false;
    store::admit_result adm =
        co_await w.store->admit(h.tenant, in_flight.owner_token, tp.limits, tp.lock_ttl);
    if (adm.ec) {
        ctx.stats.tenant_quota_errors.fetch_add(1, std::memory_order_relaxed);
        log::warn("store could not check the tenant quota",
                  {{"error", adm.ec.message()}, {"tenant", h.tenant}, {"key", h.key}});
    }
    auto action = decide_after_admit(adm, ctx.boot.store.on_failure);
    if (action == quota_action::forward) {
        admitted = !adm.ec;
        co_return std::nullopt;
    }
    // The key was reserved for nothing: free it so the client's retry can run.
    auto t1 = clock_type::now();
    auto ec = co_await w.store->release(scope, in_flight.owner_token);
    account(ctx.stats, store_op::release, t1, ec);
    handled out;
    out.tenant = h.tenant;
    out.key = h.key;
    out.principal = h.principal;
    refused why{refusal::quota_unavailable};
    if (action == quota_action::reject_quota) {
        bool in_flight_limit = adm.verdict == store::admission::too_many_in_flight;
        ctx.stats.tenant_throttled[in_flight_limit ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
        why.reason = in_flight_limit ? refusal::tenant_in_flight_limit : refusal::tenant_key_rate;
        why.retry_after_ms = adm.retry_after.count();
    }
    render_refusal(out, why, version, 0);
    co_return out;
}

} // namespace

asio::awaitable<handled> handle_request(gateway_context& ctx, worker& w, const request_env& env,
                                        request_type& req, const client_info& client, std::string& scratch)
{
    unsigned version = req.version();
    const auto& cfg = env.cfg();
    const auto* route = match_route(cfg, req.target());
    handled h;
    if (!route) {
        render_refusal(h, {refusal::no_route}, version, 0);
        co_return h;
    }
    const auto& policy = route->idempotency;
    bool shadow = policy.mode == config::route_mode::shadow;
    request_facts facts;
    request_verdict verdict = request_verdict::pass_through;
    if (auto rejection = classify_request(*route, req, client, facts, verdict)) {
        // Shadow mode changes nothing the client sees: a request enforcement would refuse for its
        // key or tenant is forwarded, and the refusal is only counted.
        if (!shadow || shadow_after_classify(verdict) != shadow_finding::would_reject) {
            render_refusal(h, *rejection, version, 0);
            co_return h;
        }
        h.shadow = shadow_finding::would_reject;
        verdict = request_verdict::pass_through;
    }

    if (verdict == request_verdict::pass_through) {
        h.result = outcome::pass_through;
        if (h.shadow != shadow_finding::none)
            ctx.stats.shadow[static_cast<int>(h.shadow)].fetch_add(1, std::memory_order_relaxed);
        co_await forward(ctx, env, *route, req, client, h, scratch);
        co_return h;
    }

    // Copies: forwarding may erase header lines these views point into.
    h.key = std::string(facts.key);
    h.tenant = std::string(facts.tenant);
    // The store sees (tenant + credential HMACs, key), as the admin API resolves it too.
    auto resolved = resolve_scope(request_scope_source(policy, h.tenant, req), ctx.boot.store.key_secret);
    std::string scope_tenant = std::move(resolved.tenant);
    h.principal = std::move(resolved.principal);
    store::scope scope{scope_tenant, h.key};
    store::record in_flight;
    in_flight.state = store::record_state::in_flight;
    in_flight.fingerprint =
        fingerprint(req.method_string(), req.target(), req.body(), policy.fingerprint, req);

    // Local tier: a finished record this thread has a fresh copy of is answered from it, with no
    // store round trip. Shadow routes never replay, so they never look.
    local_tier* tier = shadow ? nullptr : w.tier.get();
    std::string record_id;
    if (tier) {
        record_id = ctx.backend->record_id(scope);
        auto copy = tier->find(record_id, clock_type::now());
        if (copy && copy->fingerprint == in_flight.fingerprint) {
            h.response.result(copy->status); // for the access log; the bytes come from the copy
            h.prerendered = std::move(copy);
            h.result = outcome::replayed;
            co_return h;
        }
    }
    // Only a request that goes to the store needs an owner token and its tenant's limits.
    in_flight.owner_token = w.new_owner_token();
    in_flight.created_unix_ms = log::now_unix_ms();
    auto tp = resolve_tenant_policy(cfg, policy, h.tenant);
    auto t0 = clock_type::now();
    store::reserve_result reserved = co_await w.store->reserve(scope, in_flight, tp.lock_ttl);
    if (account(ctx.stats, store_op::reserve, t0, reserved.ec))
        log::warn("store reserve failed",
                  {{"error", reserved.ec.message()}, {"tenant", h.tenant}, {"key", h.key}});

    auto action = decide_after_reserve(reserved, in_flight.fingerprint, ctx.boot.store.on_failure);
    if (shadow && action != reserve_action::forward_and_record) {
        // What enforcement would have answered is counted; the request runs as if unguarded,
        // and the record (if any) is left as it is.
        h.shadow = shadow_after_reserve(action);
        if (h.shadow != shadow_finding::none)
            ctx.stats.shadow[static_cast<int>(h.shadow)].fetch_add(1, std::memory_order_relaxed);
        if (reserved.ec)
            ctx.stats.store_bypassed.fetch_add(1, std::memory_order_relaxed);
        h.result = outcome::pass_through;
        co_await forward(ctx, env, *route, req, client, h, scratch);
        co_return h;
    }

    if (action == reserve_action::in_flight_conflict && policy.on_in_flight == config::in_flight_mode::wait) {
        action = co_await wait_for_first(ctx, w, scope, policy, in_flight.fingerprint, reserved.existing,
                                         cfg.limits.max_waiting);
        if (action == reserve_action::reject_store_failure) {
            render_refusal(h, {refusal::too_many_waiting}, version, 0);
            co_return h;
        }
    }

    switch (action) {
    case reserve_action::replay:
        h.response = replay_response(std::move(reserved.existing->response), version);
        h.result = outcome::replayed;
        if (tier) {
            // The store's TTL started when the record was completed, after it was created.
            auto now = clock_type::now();
            auto left = std::chrono::milliseconds(reserved.existing->created_unix_ms + tp.record_ttl.count() -
                                                  log::now_unix_ms());
            tier->insert(std::move(record_id), std::move(reserved.existing->fingerprint), h.response,
                         now + left, now);
        }
        co_return h;
    case reserve_action::in_flight_conflict: render_refusal(h, {refusal::in_flight}, version, 0); co_return h;
    case reserve_action::released_conflict: render_refusal(h, {refusal::released}, version, 0); co_return h;
    case reserve_action::outcome_unknown:
        render_refusal(h, {refusal::outcome_unknown}, version, 0);
        co_return h;
    case reserve_action::fingerprint_mismatch:
        render_refusal(h, {refusal::mismatch}, version, policy.mismatch_status);
        co_return h;
    case reserve_action::reject_store_failure:
        render_refusal(h, {refusal::store_unavailable}, version, 0);
        co_return h;
    case reserve_action::pass_through_store_failure:
        ctx.stats.store_bypassed.fetch_add(1, std::memory_order_relaxed);
        h.result = outcome::pass_through;
        co_await forward(ctx, env, *route, req, client, h, scratch);
        co_return h;
    case reserve_action::forward_and_record: break;
    }

    bool admitted = false;
    if (tp.limited && !shadow) {
        auto refusal = co_await admit_new_key(ctx, w, scope, in_flight, tp, h, version, admitted);
        if (refusal)
            co_return std::move(*refusal);
    }

    h.result = outcome::executed;
    bool answered = co_await forward(ctx, env, *route, req, client, h, scratch);
    // settle() moves the token and the fingerprint into the record: keep copies.
    std::string token = admitted ? in_flight.owner_token : std::string();
    // By default a record enters the tier only once a replay reads it from the store: most keys
    // are never retried, and copying every new record (rendering it, evicting an older copy from
    // cold memory) costs every first execution and pushes replayed copies out.
    const bool admit_now = tier && ctx.boot.store.local_tier.admit == config::tier_admission::complete;
    std::string fingerprint_copy = admit_now ? in_flight.fingerprint : std::string();
    std::optional<store::stored_response> recorded;
    co_await settle(ctx, w, env, scope, in_flight, policy, tp.record_ttl, answered, h,
                    admit_now ? &recorded : nullptr);
    if (recorded) {
        // The store's TTL starts a moment after this: the copy expires first.
        auto now = clock_type::now();
        tier->insert(std::move(record_id), std::move(fingerprint_copy),
                     replay_response(std::move(*recorded), version), now + tp.record_ttl, now);
    }
    if (admitted) {
        auto ec = co_await w.store->leave(h.tenant, token);
        if (ec)
            ctx.stats.tenant_quota_errors.fetch_add(1, std::memory_order_relaxed);
    }
    co_return h;
}

} // namespace idemgate::gateway::detail
