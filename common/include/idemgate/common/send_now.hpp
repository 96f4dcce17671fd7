// SPDX-License-Identifier: Apache-2.0
#pragma once
// A write that does not wait: what a connected TCP socket's send buffer takes now goes in one
// sendmsg, and only the rest (usually nothing) needs an asynchronous write. The gateway's
// answers and forwarded requests, and the Redis client's command batches, go this way on plain
// TCP.
#include <algorithm>
#include <array>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <cerrno>
#include <cstddef>
#include <sys/socket.h>
#include <sys/uio.h>

namespace idemgate {

// Sends what the socket takes now, without waiting: one sendmsg with MSG_DONTWAIT (the socket's
// own blocking mode is left alone). Returns the bytes sent: 0 with no error when the send buffer
// is full, and 0 with `ec` on any other failure. A message that fits the send buffer (most
// answers and forwarded requests) then needs no asynchronous write: no operation object, no
// reactor registration, no completion posted through the scheduler. The caller writes whatever
// is left asynchronously (send_first), as before. Up to 8 buffers go in this call.
template<class ConstBufferSequence>
std::size_t send_now(boost::asio::ip::tcp::socket& socket, const ConstBufferSequence& buffers,
                     boost::system::error_code& ec)
{
    ec = {};
    std::array<iovec, 8> iov; // only the first `count` are read: not cleared first
    std::size_t count = 0;
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers) && count < iov.size(); ++it) {
        const boost::asio::const_buffer b(*it);
        if (b.size() > 0)
            iov[count++] = iovec{const_cast<void*>(b.data()), b.size()};
    }
    if (count == 0)
        return 0;
    msghdr msg{};
    msg.msg_iov = iov.data();
    msg.msg_iovlen = count;
    for (;;) {
        const auto n = ::sendmsg(socket.native_handle(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0)
            return static_cast<std::size_t>(n);
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK)
            ec.assign(errno, boost::asio::error::get_system_category());
        return 0;
    }
}

// Drops the first `n` bytes from `buffers`.
template<std::size_t N>
void consume(std::array<boost::asio::const_buffer, N>& buffers, std::size_t n) noexcept
{
    for (auto& b : buffers) {
        const auto taken = std::min(n, b.size());
        b += taken;
        n -= taken;
    }
}

// send_now on `buffers`, which then describe what is left: true when that ended the write (all
// of it sent, or `ec`); false when the rest must be written asynchronously.
template<std::size_t N>
bool send_first(boost::asio::ip::tcp::socket& socket, std::array<boost::asio::const_buffer, N>& buffers,
                boost::system::error_code& ec)
{
    consume(buffers, send_now(socket, buffers, ec));
    return ec || boost::asio::buffer_size(buffers) == 0;
}

} // namespace idemgate
