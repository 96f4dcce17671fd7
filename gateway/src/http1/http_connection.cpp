// SPDX-License-Identifier: Apache-2.0
// Plain HTTP client connections: the one instantiation of http_connection over beast::tcp_stream
// (see http_connection_impl.hpp for why each stream type has its own file).
#include "http1/http_connection_impl.hpp"

namespace idemgate::gateway::detail {

asio::awaitable<void> serve_plain_connection(gateway_context& ctx, worker& w, tcp::socket socket,
                                             client_info client)
{
    connection_guard conn(ctx.stats);
    beast::tcp_stream stream(std::move(socket));
    http_connection<beast::tcp_stream> connection(ctx, w, stream, std::move(client));
    co_await connection.run();
}

} // namespace idemgate::gateway::detail
