// SPDX-License-Identifier: Apache-2.0
#pragma once
// Listening sockets: what the client listener and the admin listener share.
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <idemgate/config/config.hpp>

namespace idemgate::gateway::detail {

using tcp = boost::asio::ip::tcp;

// Opens, binds and listens; throws std::system_error naming `what` and the address on failure.
void open_listener(tcp::acceptor& acceptor, const tcp::endpoint& ep, bool reuse_port, const char* what);

// Resolves a configured endpoint to its first address (throws naming `what`).
tcp::endpoint resolve_one(boost::asio::io_context& ioc, const config::endpoint& ep, const char* what);

} // namespace idemgate::gateway::detail
