// SPDX-License-Identifier: Apache-2.0
// GET /readyz: whether the gateway should get traffic, and what of the store says so.
#include "admin/admin.hpp"

namespace idemgate::gateway::detail {

void answer_readyz(const gateway_context& ctx, response_type& res)
{
    const bool ok = ctx.ready();
    res.result(ok ? http::status::ok : http::status::service_unavailable);
    std::string body = ok ? "ready\n" : ctx.draining.load() ? "draining\n" : "not ready\n";
    unsigned conditions = 0;
    for (const auto& line : ctx.store_lines(conditions)) {
        body += line;
        body += '\n';
    }
    for (const auto& line : ctx.upstream_lines()) {
        body += line;
        body += '\n';
    }
    res.body() = std::move(body);
}

} // namespace idemgate::gateway::detail
