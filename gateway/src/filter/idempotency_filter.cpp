// SPDX-License-Identifier: Apache-2.0
#include "filter/idempotency_filter.hpp"

#include "core/problem.hpp"
#include "forward/big_answer.hpp"
#include "forward/proxy.hpp"
#include "idempotency/request_phases.hpp"
#include "own/lookup_answer.hpp"
#include "own/own_paths.hpp"

#include <idemgate/common/recycled.hpp>

namespace idemgate::gateway::detail {

namespace {

// A method the route guards is never sent twice, as the key's owner or not (shadow mode, a store
// failure under on_failure: pass_through, a request without a key): guarding it says it is not
// safe to repeat. Other requests keep RFC 9110 9.2.2's resend of idempotent methods.
resend_policy resend_for(const config::route_config& route, const request_type& req)
{
    const auto& policy = route.idempotency;
    if (policy.enabled && guards_method(policy, req.method_string()))
        return resend_policy::never;
    return resend_policy::idempotent_methods;
}

} // namespace

// Runs the phases in order until one has the answer or sends the request upstream; this is the
// one place a request is forwarded.
boost::asio::awaitable<void> handle_request(gateway_context& ctx, worker& w, request_exchange& ex)
{
    const request_env& env = *ex.env;
    request_type& req = *ex.req;
    handled& out = ex.answer;
    if (req.method() == http::verb::connect) {
        // A tunnel is not a request the gateway can guard, record or replay: never forwarded.
        out.response =
            make_problem(env.cfg().problems.type_base(),
                         {problems::method_not_supported, "CONNECT is not proxied"}, req.version(), true);
        out.result = outcome::rejected;
        co_return;
    }
    if (auto own = answer_own_path(env.cfg(), req)) {
        out.response = std::move(*own);
        if (out.response.result_int() >= 400)
            out.result = outcome::rejected;
        co_return;
    }
    // The phases' state in a block this thread reuses, not in this coroutine's frame: a frame
    // that large is not one Asio recycles.
    auto phases_storage = make_recycled<request_phases>(ctx, w, ex);
    request_phases& phases = *phases_storage;
    auto step = phases.classify();
    if (phases.client_lookup_request()) {
        if (step == phase_result::next)
            step = phases.scope();
        if (step == phase_result::next) {
            std::optional<store::lookup_result> found = co_await phases.client_lookup();
            if (found)
                out.response = lookup_answer(*found, req.version(), req.keep_alive());
        }
        phases.finish_answer();
        co_return;
    }
    if (step == phase_result::next)
        step = phases.scope();
    if (step == phase_result::next)
        step = phases.tier_lookup();
    if (step == phase_result::next)
        step = co_await phases.reserve();
    if (step == phase_result::next && phases.admission_needed())
        step = co_await phases.admit();
    if (step != phase_result::respond) {
        // Unguarded, or as the key's owner, whose answer settle records.
        const bool owner = step == phase_result::next;
        phases.answer().result = owner ? outcome::executed : outcome::pass_through;
        if (owner && phases.numbers_attempts())
            co_await phases.number_attempt();
        // The forwarding state in a block this thread reuses (proxy.hpp).
        auto forwarded = make_recycled<forwarding>();
        auto& pool = begin_forward(ex, phases.route(), *forwarded);
        const upstream_call call{req, forwarded->buffers, req.method() == http::verb::head,
                                 resend_for(phases.route(), req), phases.route().effective_timeouts};
        co_await pool.exchange(call, forwarded->result);
        bool answered = end_forward(ctx, ex, phases.route(), *forwarded);
        forwarded.reset();
        auto& h = phases.answer();
        if (h.big && h.big->rest) {
            if (auto* sink = ex.sink) {
                phases.announce_big_answer();
                std::unique_ptr<lock_keeper> keeper;
                if (owner)
                    keeper = phases.keep_lock();
                co_await pass_on(*sink, h, env.cfg(), phases.route().effective_timeouts);
            } else {
                // No codec to pass it on through: refused as if over max_response_body.
                h.big->rest.reset();
                h.response = make_problem(env.cfg().problems.type_base(),
                                          {problems::bad_gateway, "the answer is too large to record"},
                                          req.version(), false);
            }
        }
        if (owner)
            co_await phases.settle(answered);
        if (h.big && h.big->tail_pending)
            co_await finish_pass_on(*ex.sink, h);
        if (!owner && phases.compares_answer())
            phases.shadow_answered(answered);
    }
    if (phases.routed()) {
        phases.answer().route = &phases.route().path_prefix;
        phases.answer().route_index = &phases.route() - env.cfg().routes.data();
    }
    phases.finish_answer();
}

} // namespace idemgate::gateway::detail
