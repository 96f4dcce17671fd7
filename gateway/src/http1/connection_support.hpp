// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small pieces of the HTTP/1.1 connection loop (http_connection_impl.hpp): the in-flight count
// drain waits on, which read errors mean the client simply went away, and how the others are
// answered.
#include "core/problem.hpp"

#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/problem_types.hpp>
#include <string_view>

namespace idemgate::gateway::detail {

// Counts a request as in flight from header read to response written (drain waits on it).
struct in_flight_guard {
    metrics& m;
    explicit in_flight_guard(metrics& mm) : m(mm) { m.requests_in_flight.fetch_add(1); }
    ~in_flight_guard() { m.requests_in_flight.fetch_sub(1); }
    in_flight_guard(const in_flight_guard&) = delete;
    in_flight_guard& operator=(const in_flight_guard&) = delete;
};

// The client went away (or broke its TLS session): nothing can be answered.
inline bool is_quiet_close(const boost::system::error_code& ec)
{
    namespace asio = boost::asio;
    namespace http = boost::beast::http;
    return ec == http::error::end_of_stream || ec == asio::error::eof ||
           ec == asio::error::connection_reset || ec == http::error::partial_message ||
           ec.category() == asio::error::get_ssl_category() ||
           ec.category() == asio::ssl::error::get_stream_category();
}

// The answer to a request whose header (`body` false) or body could not be read: its problem and
// detail ("" for a malformed request: the error's own message). `p` null: the client went away or
// the connection was stopped, and nothing is answered.
struct read_refusal {
    const problem* p = nullptr;
    std::string_view detail;
};

inline read_refusal refusal_for_read(const boost::system::error_code& ec, bool body)
{
    namespace http = boost::beast::http;
    if (ec == http::error::header_limit)
        return {&problems::header_too_large, "the request header exceeds limits.max_header_bytes"};
    if (ec == http::error::body_limit)
        return {&problems::body_too_large, "the request body exceeds limits.max_request_body"};
    if (ec == boost::beast::error::timeout)
        return {
            &problems::request_timeout,
            body ? "the request body did not arrive within body_read (the route's, else timeouts.body_read)"
                 : "the request header did not arrive within timeouts.header_read"};
    if (is_quiet_close(ec) || ec == boost::asio::error::operation_aborted)
        return {};
    return {&problems::bad_request, {}};
}

} // namespace idemgate::gateway::detail
