// SPDX-License-Identifier: Apache-2.0
#pragma once
// The memory store's tenant quotas: per tenant, the reservations in flight by owner
// token with their lock expiry (max_in_flight) and a token bucket (new_keys_per_second). One
// mutex: admit and leave run once per new key, never on a replay. The Redis store keeps the
// same state in Redis (admit_script).
#include <chrono>
#include <idemgate/store/store.hpp>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace idemgate::store::detail {

class tenant_quotas {
public:
    using clock = std::chrono::steady_clock;

    // Admits one new reservation of `owner_token` for `tenant` at `now`, or says which limit
    // refused it and when a retry may be admitted.
    admit_result admit(std::string_view tenant, std::string_view owner_token, const tenant_limits& limits,
                       duration lock_ttl, clock::time_point now);
    // The reservation settled: it no longer counts against max_in_flight.
    void leave(std::string_view tenant, std::string_view owner_token);

private:
    struct tenant_state {
        std::unordered_map<std::string, clock::time_point> in_flight; // owner token -> lock expiry
        double tokens = 0;
        double rate = 0;
        clock::time_point refilled;
        bool bucket_started = false;
    };

    void sweep_tenants(clock::time_point now);

    std::mutex mutex_;
    std::unordered_map<std::string, tenant_state> tenants_;
    std::size_t next_tenant_sweep_ = 1024;
};

} // namespace idemgate::store::detail
