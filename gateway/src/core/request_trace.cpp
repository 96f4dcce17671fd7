// SPDX-License-Identifier: Apache-2.0
#include "core/request_trace.hpp"

namespace idemgate::gateway::detail {

void request_trace::add_child(tracing::span child, std::chrono::steady_clock::time_point started)
{
    if (!sampled)
        return;
    child.trace = trace;
    if (child.id == tracing::span_id{})
        child.id = tracing::new_span_id();
    child.parent = server_span;
    child.end_unix_ns = tracing::now_unix_ns();
    auto took =
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started);
    child.start_unix_ns = child.end_unix_ns - static_cast<std::uint64_t>(took.count());
    children.push_back(std::move(child));
}

void request_trace::add_event(std::string name, std::vector<tracing::attribute> attributes)
{
    if (sampled)
        events.push_back({std::move(name), tracing::now_unix_ns(), std::move(attributes)});
}

} // namespace idemgate::gateway::detail
