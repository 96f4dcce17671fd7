// SPDX-License-Identifier: Apache-2.0
#pragma once
// The access log: one JSON line per request. Every line is valid UTF-8 JSON whatever the
// client sent: bytes outside printable ASCII in the target or method are percent-encoded.
// Lines go into the I/O thread's batch buffer (access_log_writer.hpp), not straight to stdout.
#include "core/exchange.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <idemgate/gateway/access_log_writer.hpp>
#include <idemgate/gateway/request_id.hpp>
#include <memory>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// Where one I/O thread's access lines go: the process's writer (null: the access log is off)
// and the thread's batch buffer, made on the thread's first line.
struct access_log_sink {
    access_log_writer* writer;
    std::unique_ptr<access_log_buffer>& buffer;
    boost::asio::io_context& ioc; // the thread's, for the buffer's flush timer
};

// Percent-encodes bytes outside 0x20-0x7E (and '%' itself is kept: the target is already a URI).
std::string log_safe(std::string_view raw);

// A request the gateway answered through the idempotency filter. `sent` is false when the
// answer could not be written: the line then says so instead of claiming a status.
// Runs on the thread that owns `sink`. `h2_stream`: the HTTP/2 stream the request came on (the
// line then says "proto":"h2" and "stream"); 0 for HTTP/1.x.
void log_request(const access_log_sink& sink, const request_type& req, const handled& h,
                 const client_info& client, const request_ids& ids,
                 std::chrono::steady_clock::duration elapsed, boost::system::error_code write_ec,
                 std::size_t bytes_out, std::uint32_t h2_stream = 0);

// A request the gateway could not read (bad framing, limits, timeouts).
void log_rejected(const access_log_sink& sink, const client_info& client, const request_ids& ids,
                  unsigned status, std::string_view detail, boost::system::error_code write_ec,
                  std::uint32_t h2_stream = 0);

} // namespace idemgate::gateway::detail
