// SPDX-License-Identifier: Apache-2.0
#pragma once
// The timeouts: global (timeouts.*), per upstream and per route, and what a route's requests run
// under once they are resolved.
#include <chrono>
#include <optional>

namespace idemgate::config {

using duration = std::chrono::milliseconds;

struct timeouts_config {
    duration header_read{10000}; // from first byte of a request to end of its header
    duration body_read{30000};
    duration idle{60000}; // keep-alive wait for the next request
    duration client_write{30000};
    duration upstream_connect{2000};
    duration upstream_response{25000}; // one deadline: write request + read full response
    duration drain{30000};             // SIGTERM: how long in-flight requests may finish
};

// upstreams.<name>.timeouts and routes[].timeouts: values that beat the global timeouts.* for
// one upstream or route (route over upstream over global); absent = inherited. body_read is a
// route's only; header_read, idle, client_write and drain are global only.
struct timeout_overrides {
    std::optional<duration> upstream_connect;
    std::optional<duration> upstream_response;
    std::optional<duration> body_read;
    bool any() const noexcept { return upstream_connect || upstream_response || body_read; }
};

// The timeouts a route's requests run under, resolved once at load: the route's own, else its
// upstream's, else timeouts.*.
struct route_timeouts {
    duration upstream_connect{2000};
    duration upstream_response{25000};
    duration body_read{30000};
    // How long a request can hold its lock on the upstream: a retried connect, the exchange, and
    // the store's round trips (lock_ttl must stay above it; the prober's claim lasts it).
    duration exchange_bound() const noexcept
    {
        return 2 * upstream_connect + upstream_response + duration(1000);
    }
};

} // namespace idemgate::config
