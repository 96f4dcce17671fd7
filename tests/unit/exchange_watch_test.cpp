// SPDX-License-Identifier: Apache-2.0
// The upstream pool's one-timer deadline, on real loopback sockets: an exchange past its due time
// has its socket shut down (a pending read ends, and so does one started later), one disarmed in
// time is left alone, and each entry fires at its own due time, earlier or later than the others.
#include "socket_pair.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <doctest/doctest.h>
#include <idemgate/gateway/exchange_watch.hpp>
#include <memory>
#include <optional>

using namespace idemgate::gateway;
namespace asio = boost::asio;
using idemgate::test::socket_pair;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// A read on `socket` that records when and how it ended.
struct read_watcher {
    char byte = 0;
    std::optional<boost::system::error_code> ended;
    std::size_t bytes = 0;
    clock_type::time_point at{};

    void start(tcp::socket& socket)
    {
        socket.async_read_some(asio::buffer(&byte, 1), [this](boost::system::error_code ec, std::size_t n) {
            ended = ec;
            bytes = n;
            at = clock_type::now();
        });
    }
};

// Runs `io` until `done` holds or `limit` passes.
template<class Done>
void run_until(asio::io_context& io, Done done, std::chrono::milliseconds limit = 3s)
{
    auto until = clock_type::now() + limit;
    while (!done() && clock_type::now() < until) {
        if (io.stopped())
            io.restart(); // out of work after an earlier run
        io.run_one_for(10ms);
    }
}

// A watch and one entry for one socket pair (destroyed in reverse: the entry first).
struct one_watched_socket {
    asio::io_context io;
    socket_pair pair{io};
    exchange_watch watch{io.get_executor()};
    exchange_watch::entry entry;
};

} // namespace

TEST_CASE_FIXTURE(one_watched_socket,
                  "an exchange past its due time has its pending read ended and fired() set")
{
    auto start = clock_type::now();
    entry.arm(watch, pair.near, start + 60ms);
    read_watcher read;
    read.start(pair.near);
    run_until(io, [&] { return read.ended.has_value(); });
    REQUIRE(read.ended.has_value());
    CHECK(*read.ended); // an error: the peer never wrote
    CHECK(read.bytes == 0);
    CHECK(entry.fired());
    CHECK(read.at - start >= 60ms);
    CHECK(read.at - start < 1s);
}

TEST_CASE_FIXTURE(one_watched_socket, "a read started after the deadline passed ends at once")
{
    entry.arm(watch, pair.near, clock_type::now() + 20ms);
    run_until(io, [&] { return entry.fired(); });
    REQUIRE(entry.fired());
    // Nothing was cancelled (no operation was pending), yet the read does not wait: the socket
    // is shut down, so it ends at once with end of stream.
    read_watcher read;
    auto start = clock_type::now();
    read.start(pair.near);
    run_until(io, [&] { return read.ended.has_value(); });
    REQUIRE(read.ended.has_value());
    CHECK(*read.ended == asio::error::eof);
    CHECK(read.at - start < 500ms);
}

TEST_CASE_FIXTURE(one_watched_socket, "an entry disarmed before its due time is never fired")
{
    entry.arm(watch, pair.near, clock_type::now() + 30ms);
    entry.disarm();
    read_watcher read;
    read.start(pair.near);
    asio::steady_timer later(io, 200ms);
    later.async_wait([&](boost::system::error_code) { asio::write(pair.far, asio::buffer("x", 1)); });
    run_until(io, [&] { return read.ended.has_value(); });
    REQUIRE(read.ended.has_value());
    CHECK(!*read.ended);
    CHECK(read.bytes == 1);
    CHECK(!entry.fired());
}

TEST_CASE("each entry fires at its own due time, whichever was armed first")
{
    asio::io_context io;
    socket_pair early_pair(io);
    socket_pair late_pair(io);
    exchange_watch watch(io.get_executor());
    exchange_watch::entry early;
    exchange_watch::entry late;
    auto start = clock_type::now();
    SUBCASE("the later one armed second (the timer is not touched)")
    {
        early.arm(watch, early_pair.near, start + 50ms);
        late.arm(watch, late_pair.near, start + 400ms);
    }
    SUBCASE("the earlier one armed second (the timer is brought forward)")
    {
        late.arm(watch, late_pair.near, start + 400ms);
        early.arm(watch, early_pair.near, start + 50ms);
    }
    read_watcher early_read;
    read_watcher late_read;
    early_read.start(early_pair.near);
    late_read.start(late_pair.near);
    run_until(io, [&] { return early_read.ended.has_value(); });
    REQUIRE(early_read.ended.has_value());
    CHECK(early.fired());
    CHECK(!late.fired());
    CHECK(!late_read.ended.has_value());
    CHECK(early_read.at - start < 400ms);
    run_until(io, [&] { return late_read.ended.has_value(); });
    REQUIRE(late_read.ended.has_value());
    CHECK(late.fired());
    CHECK(late_read.at - start >= 400ms);
}

TEST_CASE("re-arming an entry moves it to the new socket and due time")
{
    asio::io_context io;
    socket_pair first(io);
    socket_pair second(io);
    exchange_watch watch(io.get_executor());
    exchange_watch::entry entry;
    entry.arm(watch, first.near, clock_type::now() + 30ms);
    entry.arm(watch, second.near, clock_type::now() + 80ms);
    read_watcher first_read;
    read_watcher second_read;
    first_read.start(first.near);
    second_read.start(second.near);
    run_until(io, [&] { return second_read.ended.has_value(); });
    REQUIRE(second_read.ended.has_value());
    CHECK(entry.fired());
    CHECK(!first_read.ended.has_value()); // the first socket is no longer watched
    asio::write(first.far, asio::buffer("x", 1));
    run_until(io, [&] { return first_read.ended.has_value(); });
    REQUIRE(first_read.ended.has_value());
    CHECK(first_read.bytes == 1);
}

TEST_CASE("entries outliving their watch are no longer watched, and its timer's handler is harmless")
{
    asio::io_context io;
    socket_pair pair(io);
    auto watch = std::make_unique<exchange_watch>(io.get_executor());
    exchange_watch::entry entry;
    entry.arm(*watch, pair.near, clock_type::now() + 20ms);
    watch.reset();
    read_watcher read;
    read.start(pair.near);
    asio::steady_timer later(io, 150ms);
    later.async_wait([&](boost::system::error_code) { asio::write(pair.far, asio::buffer("x", 1)); });
    run_until(io, [&] { return read.ended.has_value(); });
    REQUIRE(read.ended.has_value());
    CHECK(read.bytes == 1);
    CHECK(!entry.fired());
    entry.disarm(); // unlinked already: nothing to do
}
