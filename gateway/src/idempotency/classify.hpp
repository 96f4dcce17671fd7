#pragma once
// The classify phase of the idempotency filter: which route a request takes, whether it is
// guarded, and whether its key, tenant and Connection header are well-formed. No store, no I/O.
#include "core/exchange.hpp"
#include "idempotency/refusal.hpp"

#include <idemgate/config/config.hpp>
#include <idemgate/gateway/decision.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// The first route whose path_prefix the target's path (query left out) starts with.
const config::route_config* match_route(const config::config& cfg, std::string_view target);

// Is the request guarded, and are its key and tenant well-formed? Returns the refusal (a
// rejection, answered before the store), or nothing with `facts` and `verdict` filled for a
// guarded or pass-through request. A quoted key with escapes is decoded into `key_storage`,
// which facts.key then points into.
std::optional<refused> classify_request(const config::route_config& route, const request_type& req,
                                        const client_info& client, request_facts& facts,
                                        request_verdict& verdict, std::string& key_storage);

// For an answer the connection gives before the filter runs (bad framing, a body over the
// limit): the route's status_header when the request carried the route's key, else "".
std::string_view status_header_for(const config::config& cfg, const request_type& req);

} // namespace idemgate::gateway::detail
