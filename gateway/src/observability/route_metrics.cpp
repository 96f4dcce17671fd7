// SPDX-License-Identifier: Apache-2.0
#include "observability/route_metrics.hpp"

#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/prometheus.hpp>

namespace idemgate::gateway::detail {

namespace {

namespace http = boost::beast::http;

constexpr auto method_names =
    std::to_array<const char*>({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "other"});
static_assert(method_names.size() == route_method_count, "a name per method index");

std::size_t method_index(http::verb method) noexcept
{
    switch (method) {
    case http::verb::get: return 0;
    case http::verb::head: return 1;
    case http::verb::post: return 2;
    case http::verb::put: return 3;
    case http::verb::patch: return 4;
    case http::verb::delete_: return 5;
    case http::verb::options: return 6;
    default: return 7;
    }
}

} // namespace

void route_counters::count(http::verb method, unsigned status) noexcept
{
    std::size_t code = status >= 100 && status < 600 ? status / 100 - 1 : route_code_count - 1;
    requests[method_index(method) * route_code_count + code].fetch_add(1, std::memory_order_relaxed);
}

route_counters& route_registry::counters(const std::string& route)
{
    std::lock_guard lock(mutex_);
    auto& slot = counters_[route];
    if (!slot)
        slot = std::make_unique<route_counters>();
    return *slot;
}

std::vector<std::pair<std::string, route_counters*>> route_registry::all() const
{
    std::lock_guard lock(mutex_);
    std::vector<std::pair<std::string, route_counters*>> out;
    out.reserve(counters_.size());
    for (const auto& [route, c] : counters_)
        out.emplace_back(route, c.get());
    return out;
}

void route_registry::render(std::string& out, bool exemplars) const
{
    std::lock_guard lock(mutex_);
    prometheus::header(out, "idemgate_shadow_figures_total", "counter",
                       "What shadow routes saw, by route and figure, counted by this process (the "
                       "store-wide report: GET /admin/v1/shadow). Series appear at a route's first "
                       "keyed request.");
    for (const auto& [route, c] : counters_) {
        if (c->shadow[0].load(std::memory_order_relaxed) == 0)
            continue; // keyed: every other figure is a keyed request too
        for (std::size_t f = 0; f < store::shadow_figure_count; ++f) {
            std::string labels = "route=\"" + prometheus::label_value(route) + "\",figure=\"";
            labels += boost::describe::enum_to_string(static_cast<store::shadow_figure>(f), "");
            labels += '"';
            prometheus::sample(out, "idemgate_shadow_figures_total", labels,
                               static_cast<double>(c->shadow[f].load(std::memory_order_relaxed)));
        }
    }
    prometheus::header(out, "idemgate_route_requests_total", "counter",
                       "Requests answered, by route (its path_prefix; none when no route matched), "
                       "method and status class. Series appear at their first request.");
    for (const auto& [route, c] : counters_) {
        std::string route_label =
            "route=\"" + (route.empty() ? std::string("none") : prometheus::label_value(route));
        for (std::size_t m = 0; m < route_method_count; ++m)
            for (std::size_t code = 0; code < route_code_count; ++code) {
                auto n = c->requests[m * route_code_count + code].load(std::memory_order_relaxed);
                if (n == 0)
                    continue;
                std::string labels = route_label;
                labels += "\",method=\"";
                labels += method_names[m];
                labels += "\",code=\"";
                labels += static_cast<char>('1' + code);
                labels += "xx\"";
                prometheus::sample(out, "idemgate_route_requests_total", labels, static_cast<double>(n));
            }
    }
    prometheus::header(out, "idemgate_route_request_duration_seconds", "histogram",
                       "Time from request header to response sent, by route (its path_prefix; none "
                       "when no route matched).");
    for (const auto& [route, c] : counters_)
        c->duration.render(out, "idemgate_route_request_duration_seconds",
                           "route=\"" +
                               (route.empty() ? std::string("none") : prometheus::label_value(route)) + "\"",
                           exemplars);
}

} // namespace idemgate::gateway::detail
