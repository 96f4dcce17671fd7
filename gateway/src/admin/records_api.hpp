// SPDX-License-Identifier: Apache-2.0
#pragma once
// GET and DELETE /admin/v1/records: one record by its scope and key, as the store holds it.
#include "admin/admin.hpp"

#include <boost/asio/awaitable.hpp>
#include <string>

namespace idemgate::gateway::detail {

// GET (the record's state, fingerprint, age and answer's size) or DELETE (204, or 404) with the
// scope parameters and key in the query string (the token already checked).
boost::asio::awaitable<response_type> answer_records(gateway_context& ctx, store::session& store,
                                                     const admin_request& req, std::string base);

} // namespace idemgate::gateway::detail
