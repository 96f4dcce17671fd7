// SPDX-License-Identifier: Apache-2.0
#include "admin/console.hpp"

#include "admin/admin.hpp"
#include "admin/embedded_files.hpp"
#include "core/problem.hpp"
#include "idempotency/refusal.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <chrono>
#include <idemgate/config/config.hpp>

namespace idemgate::gateway::detail {

namespace {

// The page loads its script and style from the same origin and nothing else; no inline script
// or style runs, and no other site may frame it (clickjacking the resolve buttons).
constexpr std::string_view console_policy = "default-src 'self'; frame-ancestors 'none'";

std::string_view content_type_of(std::string_view name)
{
    if (name.ends_with(".html"))
        return "text/html; charset=utf-8";
    if (name.ends_with(".js"))
        return "text/javascript; charset=utf-8";
    if (name.ends_with(".css"))
        return "text/css; charset=utf-8";
    return "application/octet-stream";
}

response_type only_get(std::string_view path, unsigned version, std::string_view problem_base)
{
    const std::string detail = std::string(path) + " answers GET";
    auto res = make_problem(problem_base, {problems::method_not_allowed, detail}, version, true);
    res.set(http::field::allow, "GET, HEAD");
    return res;
}

std::int64_t unix_ms(std::chrono::system_clock::time_point t)
{
    return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

boost::json::object reloads_body(const gateway_context& ctx)
{
    boost::json::array list;
    for (const auto& r : ctx.reloads.newest_first()) {
        boost::json::array problems(r.problems.begin(), r.problems.end());
        list.push_back(boost::json::object{{"at", rfc3339_utc(unix_ms(r.at))},
                                           {"result", r.applied ? "applied" : "refused"},
                                           {"trigger", r.trigger},
                                           {"problems", std::move(problems)},
                                           {"sha256", r.sha256},
                                           {"generation", r.generation}});
    }
    boost::json::object body;
    body["reloads"] = std::move(list);
    return body;
}

boost::json::object upstreams_body(const gateway_context& ctx)
{
    boost::json::array list;
    auto live = ctx.live();
    const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                         std::chrono::steady_clock::now().time_since_epoch())
                         .count();
    if (live) {
        for (const auto& fleet : live->fleets) {
            boost::json::array endpoints;
            for (const auto& a : *fleet->addresses()) {
                const auto until = a->ejected_until.load(std::memory_order_relaxed);
                const bool ejected = until > now;
                const auto failures = a->failures.load(std::memory_order_relaxed);
                boost::json::object e{
                    {"address", a->label},
                    {"host", a->host},
                    // In the rotation, and its last connect (if any) worked.
                    {"healthy", !ejected && failures == 0},
                    {"ejected", ejected},
                    {"ejections", a->ejections.load(std::memory_order_relaxed)},
                    {"consecutive_failures", failures},
                    {"in_flight", a->pending.load(std::memory_order_relaxed)},
                };
                if (ejected)
                    e["ejected_for_ms"] = (until - now) / 1'000'000;
                endpoints.push_back(std::move(e));
            }
            boost::json::object u{
                {"name", fleet->name()},
                {"resolved", fleet->resolved()},
                {"ejections_total", fleet->counters().ejections.load(std::memory_order_relaxed)},
                {"endpoints", std::move(endpoints)}};
            if (!fleet->resolved())
                u["waiting_for"] = fleet->waiting_for();
            list.push_back(std::move(u));
        }
    }
    boost::json::object body;
    body["generation"] = live ? live->generation : 0;
    body["upstreams"] = std::move(list);
    return body;
}

} // namespace

std::optional<response_type> answer_console_file(std::string_view path, http::verb method, unsigned version,
                                                 std::string_view problem_base)
{
    constexpr std::string_view prefix = "/admin/";
    if (!path.starts_with(prefix))
        return std::nullopt;
    auto name = path.substr(prefix.size());
    if (name.empty())
        name = "index.html";
    for (const auto& file : embedded_files()) {
        if (file.name != name)
            continue;
        if (method != http::verb::get && method != http::verb::head)
            return only_get(path, version, problem_base);
        response_type res{http::status::ok, version};
        res.set(http::field::content_type, content_type_of(file.name));
        res.set("Content-Security-Policy", console_policy);
        res.set("X-Content-Type-Options", "nosniff");
        res.set("Referrer-Policy", "no-referrer");
        // Revalidated each time: the next gateway version's files are picked up at once.
        res.set(http::field::cache_control, "no-cache");
        res.body().assign(file.content);
        return res;
    }
    return std::nullopt;
}

std::optional<response_type> answer_console_data(const gateway_context& ctx, std::string_view path,
                                                 http::verb method, unsigned version,
                                                 std::string_view problem_base)
{
    if (path != "/admin/v1/config" && path != "/admin/v1/reloads" && path != "/admin/v1/upstreams")
        return std::nullopt;
    if (method != http::verb::get && method != http::verb::head)
        return only_get(path, version, problem_base);
    if (path == "/admin/v1/reloads")
        return json_answer(reloads_body(ctx), version);
    if (path == "/admin/v1/upstreams")
        return json_answer(upstreams_body(ctx), version);
    // The running configuration as --print-config prints it: secrets as the environment
    // variables they come from, never their values.
    response_type res{http::status::ok, version};
    res.set(http::field::content_type, "application/yaml; charset=utf-8");
    res.set(http::field::cache_control, "no-store");
    auto live = ctx.live();
    if (live) {
        res.set("Idemgate-Config-Generation", std::to_string(live->generation));
        res.body() = config::print_config(live->cfg);
    }
    return res;
}

} // namespace idemgate::gateway::detail
