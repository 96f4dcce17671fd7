// SPDX-License-Identifier: Apache-2.0
#include "admin/shadow_api.hpp"

#include "admin/admin.hpp"
#include "core/problem.hpp"
#include "idempotency/shadow_report.hpp"

#include <boost/describe/enum_to_string.hpp>
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;

namespace {

// FIGURES: every figure by name; after_ttl "not_measured" on a route without tombstones (no
// tombstone outlives its records, so a late retry cannot be told from a new key).
boost::json::object figures(const store::shadow_counts& counts, bool tombstones)
{
    boost::json::object out;
    for (std::size_t f = 0; f < store::shadow_figure_count; ++f) {
        auto name = boost::describe::enum_to_string(static_cast<store::shadow_figure>(f), "");
        if (static_cast<store::shadow_figure>(f) == store::shadow_figure::after_ttl && !tombstones)
            out[name] = "not_measured";
        else
            out[name] = counts[f];
    }
    return out;
}

// The window a call asks for: admin.shadow_window, or its `window` parameter; else the problem.
struct asked_window {
    config::duration window{0};
    std::string problem;
};

asked_window window_asked(std::string_view target, config::duration configured)
{
    asked_window out{configured, {}};
    auto params = query_params(target);
    if (!params) {
        out.problem = "the query string is not valid percent-encoding";
        return out;
    }
    for (const auto& [name, value] : *params) {
        if (name != "window") {
            out.problem = "unknown parameter " + name + " (window)";
            return out;
        }
        auto window = config::parse_shadow_window(value);
        if (!window) {
            out.problem = "window \"" + value + "\" " + std::string(config::shadow_window_rule);
            return out;
        }
        out.window = *window;
    }
    return out;
}

} // namespace

asio::awaitable<response_type> answer_shadow(gateway_context& ctx, store::session& session,
                                             const http::request<http::string_body>& req)
{
    const unsigned version = req.version();
    auto live = ctx.live();
    auto base = live ? live->cfg.problems.type_base() : config::default_problem_base;
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        auto res =
            make_problem(base, {problems::method_not_allowed, "/admin/v1/shadow answers GET"}, version, true);
        res.set(http::field::allow, "GET, HEAD");
        co_return res;
    }
    auto asked = window_asked(req.target(),
                              live ? live->cfg.admin.shadow_window : config::admin_config{}.shadow_window);
    if (!asked.problem.empty())
        co_return make_problem(base, {problems::bad_request, asked.problem}, version, true);
    const auto window_seconds = std::chrono::duration_cast<std::chrono::seconds>(asked.window).count();
    const std::int64_t buckets = window_seconds / store::shadow_bucket.count();
    auto* tally = session.shadows();
    boost::json::array routes;
    if (live && tally) {
        co_await flush_shadow_counts(ctx, session);
        const auto now = log::now_unix_ms();
        for (const auto& route : live->cfg.routes) {
            const auto& policy = route.idempotency;
            if (!policy.enabled || policy.mode != config::route_mode::shadow)
                continue;
            auto totals = co_await tally->read_shadow_counts(route.path_prefix, now, buckets);
            if (totals.ec)
                co_return make_problem(
                    base, {problems::store_unavailable, "the store failed: " + totals.ec.message()}, version,
                    true);
            const bool tombstones = policy.tombstone_ttl.count() > 0;
            routes.push_back(boost::json::object{{"route", route.path_prefix},
                                                 {"upstream", route.upstream},
                                                 {"since_start", figures(totals.since_start, tombstones)},
                                                 {"window", figures(totals.window, tombstones)}});
        }
    }
    boost::json::object body;
    body["window_seconds"] = window_seconds;
    body["scope"] = "store";
    body["store"] = ctx.backend->kind();
    body["routes"] = std::move(routes);
    response_type res{http::status::ok, version};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-store");
    res.body() = boost::json::serialize(body);
    co_return res;
}

} // namespace idemgate::gateway::detail
