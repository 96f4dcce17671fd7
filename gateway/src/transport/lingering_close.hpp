// SPDX-License-Identifier: Apache-2.0
#pragma once
// Closing a connection whose client may still be sending, without losing the answer just
// written. Closing a socket with unread bytes makes the kernel send a reset instead of a FIN; a
// reset that reaches the client before it has read the answer can destroy the answer, and the
// client sees "connection reset" instead of the 400, 413 or GOAWAY it was sent. nginx calls the
// remedy a lingering close: half-close, read and drop what still arrives until the client closes
// or a bound is reached, then close.
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <chrono>
#include <cstddef>

namespace idemgate::gateway::detail {

struct linger_bounds {
    std::chrono::milliseconds time{2000}; // from the half-close to the close, at most
    std::size_t bytes = 1024 * 1024;      // dropped at most; a client sending more is cut
};

// Half-closes `stream`, reads and drops until the client closes, an error, or a bound; then
// closes the socket. Leaves the stream's expiry cleared.
boost::asio::awaitable<void> lingering_close(boost::beast::tcp_stream& stream, linger_bounds bounds = {});

} // namespace idemgate::gateway::detail
