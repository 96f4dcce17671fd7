// SPDX-License-Identifier: Apache-2.0
#include "own/own_paths.hpp"

#include "core/problem.hpp"

#include <idemgate/gateway/contract.hpp>
#include <idemgate/gateway/problem_pages.hpp>

namespace idemgate::gateway::detail {

namespace {

response_type document(unsigned version, bool keep_alive, std::string_view type, std::string body)
{
    response_type res{http::status::ok, version};
    res.set(http::field::content_type, type);
    res.set(http::field::cache_control, "max-age=300");
    res.body() = std::move(body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

} // namespace

std::optional<response_type> answer_own_path(const config::config& cfg, const request_type& req)
{
    auto path = req.target().substr(0, req.target().find('?'));
    std::string_view key_text;
    bool well_known = path == config::well_known_path || path.starts_with(config::default_problem_base);
    bool lookup = !well_known && lookup_route(cfg, req.target(), key_text);
    if (!well_known && !lookup)
        return std::nullopt;
    auto base = cfg.problems.type_base();
    if (req.method() != http::verb::get) {
        auto res =
            make_problem(base, {problems::method_not_allowed, "the gateway answers GET only on this path"},
                         req.version(), req.keep_alive());
        res.set(http::field::allow, "GET");
        return res;
    }
    if (lookup)
        return std::nullopt;
    if (path == config::well_known_path)
        return document(req.version(), req.keep_alive(), "application/json", contract_json(cfg));
    if (auto page = problem_page(path.substr(config::default_problem_base.size())))
        return document(req.version(), req.keep_alive(), "text/html; charset=utf-8", std::move(*page));
    return make_problem(base, {problems::no_route, "the gateway documents no problem type of this name"},
                        req.version(), req.keep_alive());
}

} // namespace idemgate::gateway::detail
