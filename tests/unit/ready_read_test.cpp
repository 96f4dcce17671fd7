// SPDX-License-Identifier: Apache-2.0
// ready_read_some on real loopback sockets with TCP_INQ on (enable_read_hints): it reads what
// async_read_some reads, and a read that follows one that emptied the socket (which makes the next
// read wait for epoll) still gets every byte, whether the byte arrives before that read is started
// or after; a FIN that comes with the last bytes is seen at once by the next read, ours or Asio's;
// end of file, cancellation (of the socket, and of the one operation through its slot) complete it
// as Asio's own read does. quiet_since_drained: on after a read that emptied the socket, off again
// once the event loop has polled a FIN or bytes, and never on where no such read was made.
#include "socket_pair.hpp"

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <doctest/doctest.h>
#include <idemgate/common/ready_read.hpp>
#include <optional>
#include <string>
#include <sys/socket.h>

namespace asio = boost::asio;
using boost::system::error_code;
using idemgate::ready_read_some;
using idemgate::test::socket_pair;

namespace {

struct read_result {
    error_code ec;
    std::size_t n = 0;
};

// Runs `io` until `done` is set, at most 5 s; false if it never was.
bool run_until(asio::io_context& io, const std::optional<read_result>& done)
{
    io.restart();
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done && std::chrono::steady_clock::now() < give_up)
        io.run_for(std::chrono::milliseconds(20));
    return done.has_value();
}

// Starts one read of at most `size` bytes into `data`; its result lands in `out`.
void start_read(socket_pair& p, char* data, std::size_t size, std::optional<read_result>& out)
{
    out.reset();
    ready_read_some(p.near, asio::buffer(data, size), [&out](error_code ec, std::size_t n) {
        out = read_result{ec, n};
    });
}

// A pair whose near side reads with TCP_INQ's counts (where the vendored read is built).
struct hinted_pair : socket_pair {
    explicit hinted_pair(asio::io_context& io) : socket_pair(io)
    {
        CHECK(idemgate::enable_read_hints(near) == idemgate::ready_read_vendored);
    }
};

} // namespace

TEST_CASE("ready_read_some: short reads, then bytes that come before and after the next read starts")
{
    asio::io_context io;
    hinted_pair p(io);
    char buf[16];
    std::optional<read_result> got;

    // A short read (5 of 16 bytes): the socket is exhausted for the reactor.
    asio::write(p.far, asio::buffer(std::string("hello")));
    start_read(p, buf, sizeof buf, got);
    REQUIRE(run_until(io, got));
    CHECK(!got->ec);
    CHECK(std::string(buf, got->n) == "hello");

    // Bytes sent before the next read starts, with no epoll wait in between: the next read must
    // still find them (the edge they raised lets it read).
    asio::write(p.far, asio::buffer(std::string("again")));
    start_read(p, buf, sizeof buf, got);
    REQUIRE(run_until(io, got));
    CHECK(!got->ec);
    CHECK(std::string(buf, got->n) == "again");

    // Bytes sent after the next read is waiting.
    start_read(p, buf, sizeof buf, got);
    io.restart();
    io.run_for(std::chrono::milliseconds(50));
    CHECK(!got); // nothing to read yet
    asio::write(p.far, asio::buffer(std::string("later")));
    REQUIRE(run_until(io, got));
    CHECK(!got->ec);
    CHECK(std::string(buf, got->n) == "later");

    // A read that fills its buffer leaves the rest for the next one.
    asio::write(p.far, asio::buffer(std::string("0123456789abcdefXYZ")));
    start_read(p, buf, sizeof buf, got);
    REQUIRE(run_until(io, got));
    CHECK(std::string(buf, got->n) == "0123456789abcdef");
    start_read(p, buf, sizeof buf, got);
    REQUIRE(run_until(io, got));
    CHECK(std::string(buf, got->n) == "XYZ");

    // Many short messages, each sent from a handler just before the next read starts.
    std::string all;
    for (int i = 0; i < 200; ++i) {
        const std::string part = "m" + std::to_string(i) + ";";
        asio::post(io, [&, part] { asio::write(p.far, asio::buffer(part)); });
        std::string seen;
        while (seen.size() < part.size()) {
            start_read(p, buf, sizeof buf, got);
            REQUIRE(run_until(io, got));
            REQUIRE(!got->ec);
            seen.append(buf, got->n);
        }
        all += seen;
        CHECK(seen == part);
    }
    CHECK(all.size() > 200);
}

TEST_CASE("ready_read_some: end of file and cancellation complete the read as async_read_some does")
{
    asio::io_context io;
    char buf[16];
    std::optional<read_result> got;

    SUBCASE("end of file after a short read")
    {
        hinted_pair p(io);
        asio::write(p.far, asio::buffer(std::string("x")));
        start_read(p, buf, sizeof buf, got);
        REQUIRE(run_until(io, got));
        CHECK(got->n == 1);
        start_read(p, buf, sizeof buf, got);
        p.far.close();
        REQUIRE(run_until(io, got));
        CHECK(got->ec == asio::error::eof);
        CHECK(got->n == 0);
    }
    SUBCASE("a FIN that came with the last bytes: the next read sees end of file at once")
    {
        hinted_pair p(io);
        asio::write(p.far, asio::buffer(std::string("HTTP/1.1 2")));
        p.far.shutdown(asio::ip::tcp::socket::shutdown_send);
        // Both arrived before the read: the read takes the bytes, the FIN is still to be read.
        io.restart();
        io.run_for(std::chrono::milliseconds(20));
        start_read(p, buf, sizeof buf, got);
        REQUIRE(run_until(io, got));
        CHECK(std::string(buf, got->n) == "HTTP/1.1 2");
        // Asio's own read after it (Beast's readers use it) must not wait for an edge that came.
        std::optional<read_result> next;
        p.near.async_read_some(asio::buffer(buf), [&next](error_code ec, std::size_t n) {
            next = read_result{ec, n};
        });
        REQUIRE(run_until(io, next));
        CHECK(next->ec == asio::error::eof);
    }
    SUBCASE("without TCP_INQ's counts: reads as async_read_some")
    {
        socket_pair p(io);
        asio::write(p.far, asio::buffer(std::string("abc")));
        start_read(p, buf, sizeof buf, got);
        REQUIRE(run_until(io, got));
        CHECK(std::string(buf, got->n) == "abc");
        p.far.shutdown(asio::ip::tcp::socket::shutdown_send);
        start_read(p, buf, sizeof buf, got);
        REQUIRE(run_until(io, got));
        CHECK(got->ec == asio::error::eof);
    }
    SUBCASE("the socket's cancel")
    {
        hinted_pair p(io);
        start_read(p, buf, sizeof buf, got);
        io.restart();
        io.run_for(std::chrono::milliseconds(20));
        REQUIRE(!got);
        p.near.cancel();
        REQUIRE(run_until(io, got));
        CHECK(got->ec == asio::error::operation_aborted);
    }
    SUBCASE("the operation's own cancellation slot")
    {
        hinted_pair p(io);
        asio::cancellation_signal signal;
        ready_read_some(p.near, asio::buffer(buf),
                        asio::bind_cancellation_slot(signal.slot(), [&got](error_code ec, std::size_t n) {
                            got = read_result{ec, n};
                        }));
        io.restart();
        io.run_for(std::chrono::milliseconds(20));
        REQUIRE(!got);
        signal.emit(asio::cancellation_type::terminal);
        REQUIRE(run_until(io, got));
        CHECK(got->ec == asio::error::operation_aborted);
        // The socket reads on afterwards.
        asio::write(p.far, asio::buffer(std::string("ok")));
        start_read(p, buf, sizeof buf, got);
        REQUIRE(run_until(io, got));
        CHECK(std::string(buf, got->n) == "ok");
    }
}

namespace {

// Runs what is ready on `io` (one epoll_wait each time) until `socket` is no longer quiet, at most
// 5 s; false if it stayed quiet. The guard keeps `io` polling epoll with no operation queued, as
// a gateway thread's other sockets keep it.
bool poll_until_not_quiet(asio::io_context& io, asio::ip::tcp::socket& socket)
{
    auto busy = asio::make_work_guard(io);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (idemgate::quiet_since_drained(socket)) {
        if (std::chrono::steady_clock::now() > give_up)
            return false;
        io.restart();
        io.poll();
    }
    return true;
}

// A read that is waiting when `bytes` arrive, so it takes them after epoll reported them: the
// state of a pooled connection whose answer was read.
void read_after_wait(asio::io_context& io, hinted_pair& p, const std::string& bytes)
{
    char buf[64];
    std::optional<read_result> got;
    start_read(p, buf, sizeof buf, got);
    io.restart();
    io.poll();
    REQUIRE(!got);
    asio::write(p.far, asio::buffer(bytes));
    REQUIRE(run_until(io, got));
    REQUIRE(!got->ec);
    CHECK(std::string(buf, got->n) == bytes);
}

} // namespace

TEST_CASE("quiet_since_drained: after a read that emptied the socket, until the event loop sees it readable")
{
    using idemgate::quiet_since_drained;
    using idemgate::ready_read_vendored;
    asio::io_context io;

    SUBCASE("a FIN while idle")
    {
        hinted_pair p(io);
        CHECK(!quiet_since_drained(p.near)); // nothing read yet
        read_after_wait(io, p, "HTTP/1.1 201 Created\r\n\r\n");
        CHECK(quiet_since_drained(p.near) == ready_read_vendored);
        // The peer closes. Until the event loop polls epoll the mark cannot know: the window a
        // caller accepts when it takes the mark for the answer.
        p.far.shutdown(asio::ip::tcp::socket::shutdown_send);
        CHECK(quiet_since_drained(p.near) == ready_read_vendored);
        CHECK(poll_until_not_quiet(io, p.near));
        CHECK(!quiet_since_drained(p.near));
        // What the peek then finds (once epoll reported the FIN): end of file.
        char byte;
        if (ready_read_vendored)
            CHECK(::recv(p.near.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0);
    }
    SUBCASE("bytes nobody asked for while idle")
    {
        hinted_pair p(io);
        read_after_wait(io, p, "answer");
        CHECK(quiet_since_drained(p.near) == ready_read_vendored);
        asio::write(p.far, asio::buffer(std::string("stray")));
        CHECK(poll_until_not_quiet(io, p.near));
        // And it stays off: no read emptied the socket since.
        {
            auto busy = asio::make_work_guard(io);
            io.restart();
            io.poll();
        }
        CHECK(!quiet_since_drained(p.near));
        // The next read that empties it (waiting first, as the next answer's does) sets it again.
        char buf[16];
        std::optional<read_result> got;
        start_read(p, buf, sizeof buf, got);
        REQUIRE(run_until(io, got));
        CHECK(std::string(buf, got->n) == "stray");
        read_after_wait(io, p, "next");
        CHECK(quiet_since_drained(p.near) == ready_read_vendored);
    }
    SUBCASE("a read that left bytes behind")
    {
        hinted_pair p(io);
        char buf[4];
        std::optional<read_result> got;
        start_read(p, buf, sizeof buf, got);
        asio::write(p.far, asio::buffer(std::string("0123456789")));
        REQUIRE(run_until(io, got));
        CHECK(got->n == 4);
        CHECK(!quiet_since_drained(p.near));
    }
    SUBCASE("a read that left the peer's FIN behind")
    {
        hinted_pair p(io);
        char buf[16];
        std::optional<read_result> got;
        start_read(p, buf, sizeof buf, got);
        io.restart();
        io.poll();
        asio::write(p.far, asio::buffer(std::string("last")));
        p.far.shutdown(asio::ip::tcp::socket::shutdown_send);
        REQUIRE(run_until(io, got));
        CHECK(std::string(buf, got->n) == "last");
        // Whether the FIN came with the bytes or after them, the mark is off.
        CHECK(poll_until_not_quiet(io, p.near));
    }
    SUBCASE("no mark without TCP_INQ's counts, after Asio's own read, or once closed")
    {
        socket_pair plain(io);
        char buf[16];
        std::optional<read_result> got;
        ready_read_some(plain.near, asio::buffer(buf), [&got](error_code ec, std::size_t n) {
            got = read_result{ec, n};
        });
        asio::write(plain.far, asio::buffer(std::string("abc")));
        REQUIRE(run_until(io, got));
        CHECK(!quiet_since_drained(plain.near));

        hinted_pair p(io);
        read_after_wait(io, p, "answer");
        CHECK(quiet_since_drained(p.near) == ready_read_vendored);
        std::optional<read_result> asio_read;
        p.near.async_read_some(asio::buffer(buf), [&asio_read](error_code ec, std::size_t n) {
            asio_read = read_result{ec, n};
        });
        asio::write(p.far, asio::buffer(std::string("more")));
        REQUIRE(run_until(io, asio_read));
        CHECK(!quiet_since_drained(p.near));

        hinted_pair q(io);
        read_after_wait(io, q, "answer");
        q.near.close();
        CHECK(!quiet_since_drained(q.near));
    }
}

TEST_CASE("ready_read_some is the vendored receive where Asio 1.81's epoll reactor is in use")
{
#if defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
    CHECK(!idemgate::ready_read_vendored);
#else
    CHECK(idemgate::ready_read_vendored == (BOOST_VERSION == 108100));
#endif
}
