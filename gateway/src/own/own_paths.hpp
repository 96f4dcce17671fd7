// SPDX-License-Identifier: Apache-2.0
#pragma once
// The gateway's own paths on the client listener, which win over every route: the published
// contract (/.well-known/idempotency), the pages of its problem types (under
// /.well-known/idempotency/problems/), and each route's client lookup path. The filter asks here
// first (handle_request), so every protocol's connection gets them without code of its own.
#include "core/exchange.hpp"
#include "idempotency/classify.hpp"

#include <idemgate/config/config.hpp>
#include <optional>
#include <string_view>

namespace idemgate::gateway::detail {

// The answer to a request for one of the gateway's own paths that needs no store: the contract, a
// problem page, a 404 for an unknown page, and 405 for a method other than GET on any own path
// (lookups included). Nothing for a GET lookup (the filter's lookup phase answers it) or a path
// that is not the gateway's.
std::optional<response_type> answer_own_path(const config::config& cfg, const request_type& req);

} // namespace idemgate::gateway::detail
