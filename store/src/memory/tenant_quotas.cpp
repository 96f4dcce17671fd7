// SPDX-License-Identifier: Apache-2.0
#include "memory/tenant_quotas.hpp"

#include <algorithm>
#include <cmath>

namespace idemgate::store::detail {

admit_result tenant_quotas::admit(std::string_view tenant, std::string_view owner_token,
                                  const tenant_limits& limits, duration lock_ttl, clock::time_point now)
{
    std::lock_guard lock(mutex_);
    if (tenants_.size() >= next_tenant_sweep_)
        sweep_tenants(now);
    auto& t = tenants_[std::string(tenant)];
    admit_result out;
    if (limits.max_in_flight > 0) {
        std::erase_if(t.in_flight, [now](const auto& e) { return e.second <= now; });
        if (t.in_flight.size() >= limits.max_in_flight) {
            out.verdict = admission::too_many_in_flight;
            out.retry_after = duration(1000);
            return out;
        }
    }
    if (limits.new_keys_per_second > 0) {
        double burst = std::max(1.0, limits.new_keys_per_second);
        if (!t.bucket_started) {
            t.tokens = burst;
            t.bucket_started = true;
        } else {
            double elapsed = std::chrono::duration<double>(now - t.refilled).count();
            t.tokens = std::min(burst, t.tokens + elapsed * limits.new_keys_per_second);
        }
        t.refilled = now;
        t.rate = limits.new_keys_per_second;
        if (t.tokens < 1) {
            out.verdict = admission::rate_exceeded;
            out.retry_after = duration(
                static_cast<duration::rep>(std::ceil((1 - t.tokens) * 1000 / limits.new_keys_per_second)));
            return out;
        }
        t.tokens -= 1;
    }
    if (limits.max_in_flight > 0)
        t.in_flight.insert_or_assign(std::string(owner_token), now + lock_ttl);
    return out;
}

void tenant_quotas::leave(std::string_view tenant, std::string_view owner_token)
{
    std::lock_guard lock(mutex_);
    auto it = tenants_.find(std::string(tenant));
    if (it != tenants_.end())
        it->second.in_flight.erase(std::string(owner_token));
}

// Tenant names come from a request header: states that hold nothing (no reservation in
// flight, bucket full again) are dropped whenever the map has doubled since the last sweep.
void tenant_quotas::sweep_tenants(clock::time_point now)
{
    std::erase_if(tenants_, [now](const auto& e) {
        const auto& t = e.second;
        if (!t.in_flight.empty())
            return std::all_of(t.in_flight.begin(), t.in_flight.end(),
                               [now](const auto& f) { return f.second <= now; }) &&
                   t.rate == 0;
        if (t.rate == 0)
            return true;
        double elapsed = std::chrono::duration<double>(now - t.refilled).count();
        return t.tokens + elapsed * t.rate >= std::max(1.0, t.rate);
    });
    next_tenant_sweep_ = std::max<std::size_t>(1024, 2 * tenants_.size());
}

} // namespace idemgate::store::detail
