// SPDX-License-Identifier: Apache-2.0
#pragma once
// The answer a refusal of <idemgate/gateway/refusal.hpp> gives: its row, rendered.
#include "core/exchange.hpp"

#include <idemgate/gateway/refusal.hpp>
#include <string>

namespace idemgate::gateway::detail {

// A refusal a phase decided on, with what its row leaves to the request.
struct refused {
    refusal reason = refusal::no_route;
    std::string detail; // replaces the row's text (rows worded from the route, the path or its headers)
    long long retry_after_ms = 0; // retry_hint::quota_wait, full_wait: how long to wait
    // The Location of the first answer for this key (a mismatch): the problem's "location" and a
    // Link with rel="original".
    std::string location;
    // The first request's answer status and time (not_replayable, record_expired): the
    // problem's "original_status" and "original_time".
    unsigned original_status = 0;
    std::string original_time;
};

// A Unix time in milliseconds as RFC 3339 in UTC, with milliseconds: "2026-01-31T09:15:02.250Z".
std::string rfc3339_utc(std::int64_t unix_ms);

// What a refusal is rendered for: the problem types' base (problems.type_base), the request's
// HTTP version, and the route's status for a row with status_from_route (0: none).
struct refusal_frame {
    std::string_view type_base;
    unsigned version = 11;
    unsigned route_status = 0;
};

// Fills `h` as the row of `r.reason` says: the problem document (its type under
// `frame.type_base`; status: the problem's, or `frame.route_status` for a row with
// status_from_route), Retry-After, the outcome, and whether the connection closes; with a
// location, the problem's "location" member and the Link header; with an original status and
// time, those members.
void render_refusal(handled& h, const refused& r, refusal_frame frame);

} // namespace idemgate::gateway::detail
