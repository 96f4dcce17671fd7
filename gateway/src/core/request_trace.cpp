// SPDX-License-Identifier: Apache-2.0
#include "core/request_trace.hpp"

namespace idemgate::gateway::detail {

void request_trace::add_child(std::string name, tracing::span_kind kind,
                              std::chrono::steady_clock::time_point started, bool error,
                              std::vector<tracing::attribute> attributes, std::optional<tracing::span_id> id)
{
    if (!sampled)
        return;
    tracing::span s;
    s.trace = trace;
    s.id = id ? *id : tracing::new_span_id();
    s.parent = server_span;
    s.name = std::move(name);
    s.kind = kind;
    s.end_unix_ns = tracing::now_unix_ns();
    auto took =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
    s.start_unix_ns = s.end_unix_ns - static_cast<std::uint64_t>(took.count());
    s.error = error;
    s.attributes = std::move(attributes);
    children.push_back(std::move(s));
}

void request_trace::add_event(std::string name, std::vector<tracing::attribute> attributes)
{
    if (sampled)
        events.push_back({std::move(name), tracing::now_unix_ns(), std::move(attributes)});
}

} // namespace idemgate::gateway::detail
