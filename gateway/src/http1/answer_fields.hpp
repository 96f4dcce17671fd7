// SPDX-License-Identifier: Apache-2.0
#pragma once
// The fields the connection adds to every answer as it writes it: what the gateway did with the
// request's key (the route's status_header; one the upstream sent is replaced) and Date when
// the answer has none (RFC 9110 6.6.1: the gateway's own answers and replays, whose recorded
// Date was left out). They are appended to the rendered head, not inserted into the message's
// fields: no allocation per answer.
#include "core/exchange.hpp"

#include <array>
#include <boost/asio/buffer.hpp>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// Appends the status line of `h` (if any) and, unless `has_date`, Date.
void append_answer_fields(std::string& out, const handled& h, bool has_date);

// The request ID field an answer carries: `name: value` (none when either is empty).
struct id_field {
    std::string_view name;
    std::string_view value;
};

// h.response as head + body buffers, its head rendered into `scratch` with, after its own
// fields, Connection as keep_alive() sets it for `keep_alive`, the request ID field `id`
// (replacing a field of that name), then the fields above.
std::array<boost::asio::const_buffer, 2> answer_buffers(handled& h, std::string& scratch, bool keep_alive,
                                                        id_field id);

// A local-tier replay in one gather write: the bytes write_message would have produced for the
// copy's answer to a request of HTTP `version` (10 or 11), the Connection field as Beast's
// keep_alive() sets it; `extra` (the request ID field, then the added fields) goes last, as on
// the other path.
std::array<boost::asio::const_buffer, 7> tier_answer_buffers(const tier_entry& e, unsigned version,
                                                             bool keep_alive, std::string_view extra);

} // namespace idemgate::gateway::detail
