// SPDX-License-Identifier: Apache-2.0
#pragma once
// listen.proxy_protocol: the PROXY header that opens each connection from a balancer, read
// before anything else (before TLS on a TLS listener).
#include "core/exchange.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/metrics.hpp>

namespace idemgate::gateway::detail {

// Whom a PROXY header is taken from (listen_proxy.trusted_proxies), how long it may take
// (timeouts.header_read), and where refusals are counted.
struct proxy_header_rules {
    const std::vector<config::cidr>& trusted;
    std::chrono::milliseconds timeout;
    metrics& stats;
};

// Reads the header under `rules.timeout`, taking exactly its bytes from the socket (it is peeked
// at first), so what follows is read by HTTP or TLS as if it came first. True with `client`
// naming the header's source (a LOCAL or UNKNOWN header keeps the peer); false when the
// connection must close: its peer is outside `rules.trusted`, no valid header came in time. Every
// refusal is counted (idemgate_proxy_protocol_refused_total) and logged, at most a few lines a
// second.
boost::asio::awaitable<bool> read_proxy_header(boost::asio::ip::tcp::socket& socket, client_info& client,
                                               proxy_header_rules rules);

// Whether `address` (text) is inside `trusted`.
bool is_trusted(const std::vector<config::cidr>& trusted, std::string_view address);

} // namespace idemgate::gateway::detail
