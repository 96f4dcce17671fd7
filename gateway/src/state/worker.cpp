// SPDX-License-Identifier: Apache-2.0
#include "state/worker.hpp"

#include <idemgate/common/digest.hpp>

namespace idemgate::gateway::detail {

worker::worker() = default;
worker::~worker() = default;

std::string worker::new_owner_token()
{
    std::string token;
    token.reserve(32);
    const auto first = rng();
    append_hex_words(token, first, rng());
    return token;
}

std::shared_ptr<request_env> worker::current(gateway_context& ctx)
{
    if (env && env->live->generation == ctx.live_generation.load(std::memory_order_acquire))
        return env;
    auto next = std::make_shared<request_env>();
    next->live = ctx.live();
    const auto& cfg = next->live->cfg;
    for (std::size_t u = 0; u < cfg.upstreams.size(); ++u) {
        auto pool = std::make_shared<upstream_pool>(ioc.get_executor(), next->live->fleets[u], cfg, ctx.stats,
                                                    next->live->upstream_contexts[u]);
        pool->attach();
        next->pools.push_back(std::move(pool));
    }
    env = std::move(next);
    return env;
}

} // namespace idemgate::gateway::detail
