// SPDX-License-Identifier: Apache-2.0
#pragma once
// The filter's side of the scope resolver (<idemgate/gateway/scope.hpp>): what a guarded request
// presents for its scope under its route's policy.
#include "core/exchange.hpp"

#include <idemgate/config/config.hpp>
#include <idemgate/gateway/scope.hpp>
#include <string_view>

namespace idemgate::gateway::detail {

// `tenant`: the request's tenant (header value or certificate common name), which must outlive
// the result, as must `route`; the credentials are read from the route's credential headers, and
// with key_space: route the route's path_prefix joins.
scope_source request_scope_source(const config::route_config& route, std::string_view tenant,
                                  const request_type& req);

} // namespace idemgate::gateway::detail
