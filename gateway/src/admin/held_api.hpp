// SPDX-License-Identifier: Apache-2.0
#pragma once
// The admin API's held keys: GET /admin/v1/held lists the keys held after an unknown outcome
// (the store's index of held keys), POST /admin/v1/records/resolve settles one as an operator
// decided: executed (a status-only record with the confirmed status) or not_executed (released).
#include "admin/admin.hpp"

#include <boost/asio/awaitable.hpp>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// GET /admin/v1/held?tenant=&limit=&cursor= (the token already checked).
boost::asio::awaitable<response_type> answer_held(gateway_context& ctx, store::session& store,
                                                  const admin_request& req, std::string base);

// POST /admin/v1/records/resolve with its JSON body (the token already checked); `client` is
// the admin client's address, logged with the decision.
boost::asio::awaitable<response_type> answer_resolve(gateway_context& ctx, store::session& store,
                                                     const admin_request& req, std::string base,
                                                     std::string client);

} // namespace idemgate::gateway::detail
