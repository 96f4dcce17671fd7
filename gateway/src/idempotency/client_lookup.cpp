// SPDX-License-Identifier: Apache-2.0
// The client lookup phase: GET <client_lookup_path><key> read from the store in the caller's
// own scope (classify and scope resolved it exactly as for a request to the route); the answer
// is rendered by the gateway's own paths (own/lookup_answer.hpp).
#include "idempotency/refusal.hpp"
#include "idempotency/request_phases.hpp"

#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

boost::asio::awaitable<std::optional<store::lookup_result>> request_phases::client_lookup()
{
    auto found = co_await w_.store->lookup(scope_);
    if (found.ec) {
        log::warn("store lookup failed",
                  {{"error", found.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}});
        refuse({refusal::store_unavailable});
        co_return std::nullopt;
    }
    if (!found.existing && policy().tombstone_ttl.count() > 0) {
        // No record: it may have expired and left a tombstone (tombstone_ttl).
        store::tombstone_result buried;
        buried.ec = make_error_code(error::store_unavailable);
        if (auto* tombstones = w_.store->tombstones())
            buried = co_await tombstones->find_tombstone(scope_);
        if (buried.ec) {
            log::warn("store lookup failed",
                      {{"error", buried.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}});
            refuse({refusal::store_unavailable});
            co_return std::nullopt;
        }
        found.existing = std::move(buried.tombstone);
    }
    co_return found;
}

} // namespace idemgate::gateway::detail
