#pragma once
// The access log: one JSON line per request. Every line is valid UTF-8 JSON whatever the
// client sent: bytes outside printable ASCII in the target or method are percent-encoded.
// Lines go into the I/O thread's batch buffer (access_log_writer.hpp), not straight to stdout.
#include "context.hpp"

#include <boost/system/error_code.hpp>
#include <chrono>
#include <idemgate/gateway/request_id.hpp>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// Percent-encodes bytes outside 0x20-0x7E (and '%' itself is kept: the target is already a URI).
std::string log_safe(std::string_view raw);

// A request the gateway answered through the idempotency filter. `sent` is false when the
// answer could not be written: the line then says so instead of claiming a status.
// Runs on worker `w`'s thread.
void log_request(gateway_context& ctx, worker& w, const request_type& req, const handled& h,
                 const client_info& client, const request_ids& ids,
                 std::chrono::steady_clock::duration elapsed, boost::system::error_code write_ec);

// A request the gateway could not read (bad framing, limits, timeouts).
void log_rejected(gateway_context& ctx, worker& w, const client_info& client, const request_ids& ids,
                  unsigned status, std::string_view detail, boost::system::error_code write_ec);

} // namespace idemgate::gateway::detail
