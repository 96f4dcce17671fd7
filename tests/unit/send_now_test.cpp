// SPDX-License-Identifier: Apache-2.0
// The write that does not wait (send_now, send_first), on real loopback sockets: what the send
// buffer takes goes at once and the buffers then describe exactly the rest, which an
// asynchronous write completes in order; a peer that is gone is an error, never a short write.
#include "socket_pair.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <doctest/doctest.h>
#include <idemgate/common/send_now.hpp>
#include <string>
#include <thread>

namespace asio = boost::asio;
using idemgate::test::socket_pair;
using tcp = asio::ip::tcp;
using idemgate::consume;
using idemgate::send_first;
using idemgate::send_now;

namespace {

std::string pattern(std::size_t n)
{
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
    return s;
}

} // namespace

TEST_CASE("consume drops bytes across buffers, empty ones included")
{
    const std::string a = "abc", c = "defgh";
    std::array<asio::const_buffer, 3> b{asio::buffer(a), asio::const_buffer(), asio::buffer(c)};
    consume(b, 4);
    CHECK(b[0].size() == 0);
    CHECK(b[1].size() == 0);
    CHECK(std::string(static_cast<const char*>(b[2].data()), b[2].size()) == "efgh");
    consume(b, 10); // more than is left: all gone
    CHECK(asio::buffer_size(b) == 0);
}

TEST_CASE("a message the send buffer takes goes whole in one call")
{
    asio::io_context io;
    socket_pair p(io);
    const std::string head = "HTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\n", body = "{}\r\n";
    std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(body)};
    boost::system::error_code ec;
    CHECK(send_first(p.near, buffers, ec));
    CHECK_FALSE(ec);
    CHECK(asio::buffer_size(buffers) == 0);
    std::string got(head.size() + body.size(), '\0');
    asio::read(p.far, asio::buffer(got));
    CHECK((got == head + body)); // a bool: the strings are megabytes
}

TEST_CASE("a full send buffer leaves exactly the rest, which an asynchronous write completes in order")
{
    asio::io_context io;
    socket_pair p(io);
    p.near.set_option(asio::socket_base::send_buffer_size(8192));
    p.near.set_option(tcp::no_delay(true));
    p.far.set_option(asio::socket_base::receive_buffer_size(8192));
    const std::string head = pattern(1000), body = pattern(192 << 10).substr(1);
    std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(body)};
    boost::system::error_code ec;
    const auto total = head.size() + body.size();
    CHECK_FALSE(send_first(p.near, buffers, ec)); // the peer reads nothing yet: it cannot all fit
    CHECK_FALSE(ec);
    const auto left = asio::buffer_size(buffers);
    CHECK(left > 0);
    CHECK(left < total); // something went
    // The buffers now start where the send stopped: the rest of the body.
    CHECK(static_cast<const char*>(buffers[1].data()) + buffers[1].size() == body.data() + body.size());
    // A second try goes on from there (the kernel may have made room meanwhile).
    CHECK_FALSE(send_first(p.near, buffers, ec));
    CHECK_FALSE(ec);
    const auto rest = asio::buffer_size(buffers);
    CHECK(rest <= left);

    std::string got(total, '\0');
    boost::system::error_code read_ec;
    std::thread reader([&] { asio::read(p.far, asio::buffer(got), read_ec); });
    boost::system::error_code write_ec;
    std::size_t written = 0;
    asio::async_write(p.near, buffers, [&](boost::system::error_code e, std::size_t n) {
        write_ec = e;
        written = n;
    });
    io.run_for(std::chrono::seconds(20)); // bounded: a wrong rest must fail the case, not hang it
    boost::system::error_code ignored;
    p.near.shutdown(tcp::socket::shutdown_both, ignored); // ends the reader if bytes are missing
    reader.join();
    CHECK_FALSE(read_ec);
    CHECK_FALSE(write_ec);
    CHECK(written == rest);
    CHECK((got == head + body)); // a bool: the strings are megabytes
}

TEST_CASE("a peer that is gone is an error that ends the write, not a short write")
{
    asio::io_context io;
    socket_pair p(io);
    p.far.set_option(asio::socket_base::linger(true, 0));
    p.far.close(); // a reset, not a FIN
    const std::string message = pattern(1000);
    boost::system::error_code ec;
    bool ended = false;
    // The first send may still be taken before the reset is seen; within a few it is an error.
    for (int i = 0; i < 50 && !ec; ++i) {
        std::array<asio::const_buffer, 1> buffers{asio::buffer(message)};
        ended = send_first(p.near, buffers, ec);
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    CHECK(ec);
    CHECK(ended);
    CHECK((ec == asio::error::connection_reset || ec == asio::error::broken_pipe));
}
