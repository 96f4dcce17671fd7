// SPDX-License-Identifier: Apache-2.0
#include "transport/listen_socket.hpp"

#include <sstream>
#include <sys/socket.h>
#include <system_error>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using boost::system::error_code;

tcp::endpoint resolve_one(asio::io_context& ioc, const config::endpoint& ep, const char* what)
{
    tcp::resolver resolver(ioc);
    error_code ec;
    auto results = resolver.resolve(ep.host, std::to_string(ep.port), ec);
    if (ec || results.empty())
        throw std::system_error(ec, std::string(what) + ": cannot resolve " + ep.to_string());
    return results.begin()->endpoint();
}

void open_listener(tcp::acceptor& acc, const tcp::endpoint& ep, bool reuse_port, const char* what)
{
    error_code ec;
    acc.open(ep.protocol(), ec);
    if (!ec)
        acc.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && reuse_port) {
        int one = 1;
        if (::setsockopt(acc.native_handle(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) != 0)
            ec = error_code(errno, boost::system::system_category());
    }
    if (!ec)
        acc.bind(ep, ec);
    if (!ec)
        acc.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
        std::ostringstream os;
        os << what << ": cannot listen on " << ep << ": " << ec.message();
        throw std::system_error(ec, os.str());
    }
}

} // namespace idemgate::gateway::detail
