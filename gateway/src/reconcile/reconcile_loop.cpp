// SPDX-License-Identifier: Apache-2.0
// The prober: claims due probes of held keys from the store's schedule and sends them to the
// route's upstream, on one I/O thread of each gateway. The claim makes each probe one gateway's
// at a time, so a fleet sends each once per `every`.
#include "reconcile/reconcile_loop.hpp"

#include "forward/proxy.hpp"
#include "idempotency/held_note.hpp"
#include "idempotency/probe_entry.hpp"
#include "upstream/upstream_pool.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/describe/enum.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/store/held_index.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using std::chrono::milliseconds;

namespace {

BOOST_DEFINE_ENUM_CLASS(probe_result, found, not_found, retry, error, gave_up);
static_assert(metric::reconcile_result_labels.size() == enum_count<probe_result>,
              "a metric label per result");

// Probes claimed at once; the rest stay due for the next tick.
constexpr std::size_t claim_batch = 32;

const config::route_config* route_of(const config::config& cfg, std::string_view prefix)
{
    for (const auto& r : cfg.routes)
        if (r.path_prefix == prefix && r.idempotency.enabled)
            return &r;
    return nullptr;
}

// How often the schedule is read: a fifth of the shortest `every` (a probe is at most that late),
// between 100 ms and 1 s; 1 s while no route reconciles.
milliseconds tick_of(const config::config& cfg)
{
    milliseconds shortest{5000};
    for (const auto& r : cfg.routes)
        if (r.idempotency.enabled && r.idempotency.reconcile.enabled())
            shortest = std::min(shortest, r.idempotency.reconcile.every);
    return std::clamp(shortest / 5, milliseconds(100), milliseconds(1000));
}

bool reconciles(const config::config& cfg)
{
    return std::any_of(cfg.routes.begin(), cfg.routes.end(), [](const config::route_config& r) {
        return r.idempotency.enabled && r.idempotency.reconcile.enabled();
    });
}

bool listed(const std::vector<unsigned>& codes, unsigned status)
{
    return std::find(codes.begin(), codes.end(), status) != codes.end();
}

boost::json::object fields_of(const probe_entry& p)
{
    return {{"route", p.route}, {"tenant", p.tenant}, {"key", p.key}, {"target", p.target}};
}

// What the probe saw, kept beside the held key for the admin API's list of held keys (until the
// record's TTL ends). A failure only leaves the list without it.
asio::awaitable<void> note_seen(worker& w, const probe_entry& p, std::string seen)
{
    auto* index = w.store->held();
    if (!index)
        co_return;
    const auto now = log::now_unix_ms();
    store::scope s{p.scope_tenant, p.key};
    auto text = encode_held_seen({now, std::move(seen)});
    milliseconds left{std::max<std::int64_t>(1, p.held_unix_ms + p.record_ttl_ms - now)};
    const auto label = held_label(p.scope_tenant);
    const store::held_text held_seen{label, p.owner_token, text, left};
    co_await index->note_held(s, held_seen);
}

// The probe settled the key (completed or released it): off the index of held keys.
asio::awaitable<void> unlist_probed(worker& w, const probe_entry& p)
{
    store::scope s{p.scope_tenant, p.key};
    if (auto* index = w.store->held())
        co_await index->unlist_held(s, held_label(p.scope_tenant));
}

// The store could not settle a probed key: logged with the store's error, and the probe is due
// again at `next_due`.
asio::awaitable<probe_result> ask_again(store::probe_schedule& schedule, const std::string& text,
                                        std::int64_t next_due, boost::system::error_code ec,
                                        boost::json::object fields, const char* message)
{
    fields["error"] = ec.message();
    log::warn(message, std::move(fields));
    co_await schedule.schedule_probe(text, next_due);
    co_return probe_result::error;
}

// Sends one probe and settles its key: completed, released, or due again.
asio::awaitable<probe_result> probe(worker& w, store::probe_schedule& schedule, const request_env& env,
                                    const std::string& text, probe_entry& p)
{
    const auto now = log::now_unix_ms();
    const auto* route = route_of(env.cfg(), p.route);
    const auto* rc = route ? &route->idempotency.reconcile : nullptr;
    if (!rc || !rc->enabled() || now - p.held_unix_ms >= rc->give_up_after.count()) {
        co_await schedule.unschedule_probe(text);
        log::warn("reconcile: gave up on a held key; it stays held until record_ttl", fields_of(p));
        co_await note_seen(w, p, "gave up (give_up_after): no more probes; held until record_ttl");
        co_return probe_result::gave_up;
    }
    const auto& policy = route->idempotency;
    request_type req;
    req.method_string(rc->method);
    req.target(p.target);
    req.version(11);
    req.set(policy.key_header, p.key);
    if (!policy.tenant_header.empty() && !p.tenant.empty())
        req.set(policy.tenant_header, p.tenant);
    upstream_result result;
    co_await forward_other(env, *route, req, result);
    const auto next_due = now + rc->every.count();
    if (result.ec || result.rest || result.head_only) {
        auto fields = fields_of(p);
        fields["error"] = result.ec ? result.ec.message() : std::string("answer too large to record");
        std::string seen = "no usable answer: ";
        seen += std::string_view(fields["error"].as_string());
        log::info("reconcile: the probe got no usable answer; asked again later", std::move(fields));
        co_await schedule.schedule_probe(text, next_due);
        co_await note_seen(w, p, std::move(seen));
        co_return probe_result::error;
    }
    auto& res = result.response;
    const unsigned status = res.result_int();
    store::scope s{p.scope_tenant, p.key};
    auto fields = fields_of(p);
    fields["status"] = static_cast<std::int64_t>(status);
    if (listed(rc->found, status)) {
        strip_hop_by_hop(res);
        reframe(res, false);
        store::record done;
        done.state = store::record_state::completed;
        done.fingerprint = p.fingerprint;
        done.owner_token = p.owner_token;
        done.created_unix_ms = p.created_unix_ms;
        done.response = recordable_head(res, env.cfg().request_id_header, policy.status_header);
        done.response.headers.push_back({std::string(reconciled_field), "true"});
        done.response.body = std::move(res.body());
        auto ec = co_await w.store->complete(s, done, milliseconds(p.record_ttl_ms));
        if (ec && ec != make_error_code(error::not_owner))
            co_return co_await ask_again(
                schedule, text, next_due, ec, std::move(fields),
                "reconcile: the store could not complete a found key; asked again later");
        co_await schedule.unschedule_probe(text);
        if (!ec) // not_owner: the key holds another record now, perhaps held again: its entry stays
            co_await unlist_probed(w, p);
        log::info(ec ? "reconcile: found, but the key no longer holds this record (removed or expired)"
                     : "reconcile: found upstream; the key completes with the probe's answer",
                  std::move(fields));
        co_return probe_result::found;
    }
    if (listed(rc->not_found, status)) {
        auto ec = co_await w.store->release(s, p.owner_token);
        if (ec && ec != make_error_code(error::not_owner))
            co_return co_await ask_again(
                schedule, text, next_due, ec, std::move(fields),
                "reconcile: the store could not release a key not found; asked again later");
        co_await schedule.unschedule_probe(text);
        if (!ec)
            co_await unlist_probed(w, p);
        log::info("reconcile: not found upstream; the key is released (a retry executes)", std::move(fields));
        co_return probe_result::not_found;
    }
    log::info("reconcile: the probe's answer is neither found nor not_found; asked again later",
              std::move(fields));
    co_await schedule.schedule_probe(text, next_due);
    co_await note_seen(w, p, "status " + std::to_string(status) + ": neither found nor not_found");
    co_return probe_result::retry;
}

} // namespace

asio::awaitable<void> reconcile_loop(gateway_context& ctx, worker& w)
{
    asio::steady_timer timer(w.ioc);
    while (!ctx.draining.load()) {
        auto env = w.current(ctx);
        const auto& cfg = env->cfg();
        timer.expires_after(tick_of(cfg));
        auto [ec] = co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (ec || ctx.draining.load())
            co_return;
        // The store keeps probes whenever a route reconciles: the configuration check saw to it.
        auto* schedule = w.store->probes();
        if (!reconciles(cfg) || !schedule)
            continue;
        // A claim lasts as long as a probe can (on the reconciling route with the longest
        // effective upstream timeouts): if this gateway stops mid-probe, another one takes the
        // probe over then.
        milliseconds lease{0};
        for (const auto& route : cfg.routes)
            if (route.idempotency.reconcile.enabled())
                lease = std::max(lease, route.effective_timeouts.exchange_bound());
        auto claimed = co_await schedule->claim_probes(log::now_unix_ms(), lease, claim_batch);
        if (claimed.ec) {
            log::coalesced(log::level::warn, "reconcile: the store could not hand out due probes",
                           claimed.ec.message(), {{"error", claimed.ec.message()}}, 1000);
            continue;
        }
        for (const auto& text : claimed.entries) {
            auto p = decode_probe(text);
            if (!p) {
                co_await schedule->unschedule_probe(text);
                log::error("reconcile: a probe on the store's schedule does not decode; dropped", {});
                ctx.stats.reconcile_probes[static_cast<int>(probe_result::gave_up)].fetch_add(1);
                continue;
            }
            auto result = co_await probe(w, *schedule, *env, text, *p);
            ctx.stats.reconcile_probes[static_cast<int>(result)].fetch_add(1, std::memory_order_relaxed);
        }
    }
}

} // namespace idemgate::gateway::detail
