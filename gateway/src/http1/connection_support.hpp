// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small pieces of the HTTP/1.1 connection loop (http_connection_impl.hpp): the in-flight count
// drain waits on, and which read errors mean the client simply went away.
#include <boost/asio/error.hpp>
#include <boost/asio/ssl/error.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/system/error_code.hpp>
#include <idemgate/gateway/metrics.hpp>

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

} // namespace idemgate::gateway::detail
