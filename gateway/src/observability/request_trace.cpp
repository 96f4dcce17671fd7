// SPDX-License-Identifier: Apache-2.0
#include "observability/request_trace.hpp"

#include "observability/span_exporter.hpp"

namespace idemgate::gateway::detail {

void finish_request_trace(span_exporter& exporter, request_exchange& ex,
                          const config::tracing_config& options)
{
    auto& trace = *ex.trace;
    const auto& req = *ex.req;
    const auto& h = ex.answer;
    const auto& client = *ex.client;
    const auto& write_error = ex.write_error;
    tracing::span server;
    server.trace = trace.trace;
    server.id = trace.server_span;
    server.parent = trace.parent;
    server.kind = tracing::span_kind::server;
    server.start_unix_ns = trace.start_unix_ns;
    server.end_unix_ns = tracing::now_unix_ns();
    std::string_view method = req.method_string();
    std::string_view target = req.target();
    auto path = target.substr(0, target.find('?'));
    // HTTP semantic conventions: "{method} {http.route}", or the method alone without a route.
    server.name = h.route ? std::string(method) + " " + *h.route : std::string(method);
    unsigned status = h.response.result_int();
    server.attributes = {{"http.request.method", std::string(method)},
                         {"url.path", std::string(path)},
                         {"http.response.status_code", std::int64_t{status}},
                         {"client.address", std::string(ex.client_ip())},
                         {"network.peer.address", client.peer.empty() ? client.ip : client.peer},
                         {"idemgate.outcome", std::string(to_string(h.result))}};
    if (h.route)
        server.attributes.push_back({"http.route", *h.route});
    if (auto host = req.find(http::field::host); host != req.end())
        server.attributes.push_back({"server.address", std::string(host->value())});
    if (options.record_tenant && !h.tenant.empty())
        server.attributes.push_back({"idemgate.tenant", h.tenant});
    if (write_error)
        server.attributes.push_back({"error.type", write_error.message()});
    server.error = status >= 500 || static_cast<bool>(write_error);
    server.events = std::move(trace.events);
    trace.children.push_back(std::move(server));
    exporter.submit(trace.children);
}

request_trace begin_request_trace(std::string_view traceparent, double ratio)
{
    request_trace t;
    auto parent = traceparent.empty() ? std::nullopt : tracing::parse_traceparent(traceparent);
    t.trace = parent ? parent->trace : tracing::new_trace_id();
    if (parent)
        t.parent = parent->span;
    t.server_span = tracing::new_span_id();
    t.sampled = tracing::sample(parent, t.trace, ratio);
    t.start_unix_ns = tracing::now_unix_ns();
    return t;
}

} // namespace idemgate::gateway::detail
