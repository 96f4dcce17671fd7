// SPDX-License-Identifier: Apache-2.0
#include "state/exchange_epilogue.hpp"

#include "observability/access_log.hpp"
#include "observability/request_trace.hpp"
#include "observability/span_exporter.hpp"
#include "state/generation.hpp"
#include "state/process.hpp"

#include <array>
#include <idemgate/gateway/client_address.hpp>
#include <idemgate/gateway/http_rules.hpp>

namespace idemgate::gateway::detail {

namespace {

// The client a trusted peer's X-Forwarded-For or Forwarded fields name (<idemgate/gateway/
// client_address.hpp>); unchanged (the connection's) when they name none or are malformed.
void read_forwarded_client(const std::vector<config::cidr>& trusted, const request_type& req,
                           std::string& out)
{
    constexpr std::size_t most = 32; // more fields than this: not a balancer's, ignored
    std::array<std::string_view, most> x_forwarded_for, forwarded;
    std::size_t xff = 0, fwd = 0;
    for (const auto& f : req) {
        const auto name = f.name_string();
        if (same_field_name(name, "X-Forwarded-For")) {
            if (xff == most)
                return;
            x_forwarded_for[xff++] = f.value();
        } else if (same_field_name(name, "Forwarded")) {
            if (fwd == most)
                return;
            forwarded[fwd++] = f.value();
        }
    }
    if (xff == 0 && fwd == 0)
        return;
    if (auto client = forwarded_client(std::span(x_forwarded_for.data(), xff),
                                       std::span(forwarded.data(), fwd), trusted))
        out = std::move(*client);
}

} // namespace

void begin_exchange(const gateway_context& ctx, request_exchange& ex)
{
    const auto& cfg = ex.env->cfg();
    read_request_ids(*ex.req, cfg.request_id_header, ex.ids);
    if (ex.client && ex.client->trusted)
        read_forwarded_client(ctx.boot.listen_proxy.trusted_proxies, *ex.req, ex.client_address);
    if (ctx.tracer) {
        auto traceparent = find_header(*ex.req, "traceparent");
        ex.trace = begin_request_trace(traceparent.count == 1 ? traceparent.value : std::string_view{},
                                       ctx.boot.tracing.sample_ratio);
    }
}

void finish_exchange(gateway_context& ctx, worker& w, request_exchange& ex)
{
    const auto& cfg = ex.env->cfg();
    const auto& h = ex.answer;
    const access_log_sink sink{ctx.access_log.get(), w.access_log, w.ioc};
    const auto method = ex.req ? ex.req->method() : http::verb::unknown;
    if (!ex.refused.empty()) {
        ctx.stats.count(outcome::rejected);
        ex.env->live->route_stats_of(-1).count(method, h.response.result_int());
        if (cfg.access_log)
            log_rejected(sink, ex);
        return;
    }
    const auto elapsed = request_exchange::clock::now() - ex.started;
    // A sampled trace's ID is the latency buckets' exemplar (OpenMetrics): a slow bucket links
    // to a trace of a request that fell in it.
    const auto* trace = ex.trace && ex.trace->sampled ? &ex.trace->trace : nullptr;
    ctx.stats.request_latency[static_cast<int>(h.result)].observe(elapsed, trace);
    ctx.stats.count(h.result);
    auto& route_stats = ex.env->live->route_stats_of(h.route_index);
    route_stats.count(method, h.response.result_int());
    route_stats.duration.observe(elapsed, trace);
    if (cfg.access_log) {
        access_names names;
        if (h.route_index >= 0) {
            const auto& route = cfg.routes[static_cast<std::size_t>(h.route_index)];
            names.route = route.path_prefix;
            if (h.upstream_us >= 0)
                names.upstream = cfg.upstreams[route.upstream_index].name;
        }
        log_request(sink, ex, elapsed, names);
    }
    if (ex.trace && ex.trace->sampled)
        finish_request_trace(*ctx.tracer, ex, ctx.boot.tracing);
}

} // namespace idemgate::gateway::detail
