// SPDX-License-Identifier: Apache-2.0
#pragma once
// A connected pair of TCP sockets over 127.0.0.1 for unit cases that need real sockets: `near`
// is the side under test, `far` its peer.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace idemgate::test {

struct socket_pair {
    explicit socket_pair(boost::asio::io_context& io) : near(io), far(io)
    {
        using tcp = boost::asio::ip::tcp;
        tcp::acceptor acceptor(io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0));
        near.connect(acceptor.local_endpoint());
        acceptor.accept(far);
    }
    boost::asio::ip::tcp::socket near;
    boost::asio::ip::tcp::socket far;
};

} // namespace idemgate::test
