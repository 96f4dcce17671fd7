#pragma once
// The idempotency filter: the phases of request_phases.hpp (classify -> scope -> tier_lookup ->
// reserve -> admit -> forward -> settle -> respond). The only code that talks to the store and
// to decision.hpp; the connection loop hands it a fully read request and writes whatever answer
// it returns.
#include "state/worker.hpp"

#include <boost/asio/awaitable.hpp>

namespace idemgate::gateway::detail {

// Handles one complete request (body read, framing checked) on worker `w`.
// `env`: the live configuration the request runs under, with this thread's upstream pools.
boost::asio::awaitable<handled> handle_request(gateway_context& ctx, worker& w, const request_env& env,
                                               request_type& req, const client_info& client,
                                               std::string& scratch);

} // namespace idemgate::gateway::detail
