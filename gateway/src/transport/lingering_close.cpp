// SPDX-License-Identifier: Apache-2.0
#include "transport/lingering_close.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace idemgate::gateway::detail {

boost::asio::awaitable<void> lingering_close(boost::beast::tcp_stream& stream, linger_bounds bounds)
{
    namespace asio = boost::asio;
    boost::system::error_code ignored;
    auto& socket = stream.socket();
    socket.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    if (!ignored) {
        stream.expires_after(bounds.time);
        std::array<char, 16 * 1024> sink;
        std::size_t dropped = 0;
        while (dropped < bounds.bytes) {
            auto [ec, n] =
                co_await stream.async_read_some(asio::buffer(sink), asio::as_tuple(asio::use_awaitable));
            if (ec)
                break;
            dropped += n;
        }
        stream.expires_never();
    }
    socket.close(ignored);
}

} // namespace idemgate::gateway::detail
