// SPDX-License-Identifier: Apache-2.0
#pragma once
// What upstream_pool.cpp (the pool) and upstream_exchange.cpp (one request and its answer)
// share about a pooled connection: the TLS connection type and the stream under either kind.
#include "transport/tls.hpp"
#include "upstream/upstream_pool.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <memory>

namespace idemgate::gateway::detail {

struct upstream_tls_connection {
    upstream_tls_connection(const boost::asio::any_io_executor& ex, boost::asio::ssl::context& ctx)
        : stream(ex, ctx)
    {
    }
    tls_stream stream;
};

inline boost::beast::tcp_stream& stream_of(std::unique_ptr<boost::beast::tcp_stream>& c)
{
    return *c;
}

inline tls_stream& stream_of(std::unique_ptr<upstream_tls_connection, tls_connection_deleter>& c)
{
    return c->stream;
}

} // namespace idemgate::gateway::detail
