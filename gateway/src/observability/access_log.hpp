// SPDX-License-Identifier: Apache-2.0
#pragma once
// The access log: one JSON line per request. Every line is valid UTF-8 JSON whatever the
// client sent: bytes outside printable ASCII in the target or method are percent-encoded.
// Lines go into the I/O thread's batch buffer (access_log_writer.hpp), not straight to stdout.
#include "core/request_exchange.hpp"

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

// What the access line names from the configuration the request ran under: the route as the
// metrics label it (its path_prefix; "none" when none matched) and the upstream it was forwarded
// to (empty: not forwarded).
struct access_names {
    std::string_view route = "none";
    std::string_view upstream;
};

// A request the gateway answered through the idempotency filter: `ex.write_error` set when the
// answer could not be written (the line then says so instead of claiming a status). Runs on the
// thread that owns `sink`. A request that came on an HTTP/2 stream (`ex.stream`) says
// "proto":"h2" and "stream".
void log_request(const access_log_sink& sink, const request_exchange& ex,
                 std::chrono::steady_clock::duration elapsed, const access_names& names);

// A request the gateway could not read or refused before handling it (bad framing, limits,
// timeouts): its status and `ex.refused` as the detail.
void log_rejected(const access_log_sink& sink, const request_exchange& ex);

} // namespace idemgate::gateway::detail
