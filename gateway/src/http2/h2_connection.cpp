// SPDX-License-Identifier: Apache-2.0
#include "http2/h2_connection.hpp"

#include "http2/h2_session.hpp"
#include "transport/connection_deadline.hpp"
#include "transport/lingering_close.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <cstring>
#include <idemgate/common/use_tuple.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;

namespace {

// Counts the connection in connections_active (limits.max_connections) while it is served.
struct counted_connection {
    metrics& m;
    explicit counted_connection(metrics& mm) : m(mm) { m.connections_active.fetch_add(1); }
    ~counted_connection() { m.connections_active.fetch_sub(1); }
};

// The I/O of one HTTP/2 connection: a reader feeding the session and a writer sending what it
// produces, and a tick for the session's deadlines, all on the connection's thread.
template<class Stream>
class h2_connection {
public:
    h2_connection(gateway_context& ctx, worker& w, Stream& stream, client_info client)
        : stream_(stream), session_(std::make_shared<h2_session>(ctx, w, std::move(client))),
          write_timeout_(w.current(ctx)->cfg().timeouts.client_write), wake_(stream.get_executor()),
          tick_(stream.get_executor()), write_deadline_(stream.get_executor()), read_buffer_(16 * 1024)
    {
        ctx.stats.h2_connections.fetch_add(1, std::memory_order_relaxed);
    }

    asio::awaitable<void> run()
    {
        using namespace asio::experimental::awaitable_operators;
        beast::get_lowest_layer(stream_).expires_never();
        session_->on_output([this] { wake_.cancel(); });
        if (session_->start())
            co_await (read_loop() && write_loop() && tick_loop());
        // Streams still in the filter finish (and record) without this connection.
        session_->detach();
    }

private:
    tcp::socket& socket() { return beast::get_lowest_layer(stream_).socket(); }

    asio::awaitable<void> read_loop()
    {
        while (!writer_done_) {
            auto [ec, n] = co_await stream_.async_read_some(asio::buffer(read_buffer_), use_tuple);
            if (ec || !session_->receive(read_buffer_.data(), n))
                break;
            wake_.cancel();
        }
        reader_done_ = true;
        wake_.cancel();
    }

    asio::awaitable<void> write_loop()
    {
        std::string out;
        for (;;) {
            out.clear();
            if (!session_->collect(out, 64 * 1024))
                break;
            if (!out.empty()) {
                write_deadline_.arm(socket(), write_timeout_);
                auto [ec, n] = co_await asio::async_write(stream_, asio::buffer(out), use_tuple);
                write_deadline_.disarm();
                if (ec)
                    break;
                continue;
            }
            if (reader_done_ || session_->finished())
                break;
            // Woken by cancel(); a timer that never expires is never the thread's earliest, so
            // waiting and waking cost no timer system call.
            wake_.expires_at(asio::steady_timer::time_point::max());
            co_await wake_.async_wait(use_tuple);
        }
        writer_done_ = true;
        error_code ignored;
        socket().cancel(ignored); // ends the reader's pending read
        tick_.cancel();
    }

    // Once a second: the session's deadlines (per-stream timeouts, idle, drain).
    asio::awaitable<void> tick_loop()
    {
        while (!writer_done_) {
            tick_.expires_after(std::chrono::seconds(1));
            co_await tick_.async_wait(use_tuple);
            if (writer_done_)
                break;
            session_->sweep(h2_session::clock::now()); // wakes the writer
        }
    }

    Stream& stream_;
    std::shared_ptr<h2_session> session_;
    std::chrono::milliseconds write_timeout_;
    asio::steady_timer wake_;
    asio::steady_timer tick_;
    deadline write_deadline_;
    std::vector<unsigned char> read_buffer_;
    bool reader_done_ = false;
    bool writer_done_ = false;
};

} // namespace

asio::awaitable<first_bytes> peek_first_bytes(tcp::socket& socket, std::chrono::milliseconds timeout)
{
    deadline limit(socket.get_executor());
    limit.arm(socket, timeout);
    asio::steady_timer pause(socket.get_executor());
    first_bytes result = first_bytes::none;
    for (;;) {
        auto [ec] = co_await socket.async_wait(tcp::socket::wait_read, use_tuple);
        if (ec)
            break;
        std::array<char, h2_preface.size()> head;
        error_code rec;
        auto n = socket.receive(asio::buffer(head), tcp::socket::message_peek, rec);
        if (rec || n == 0)
            break;
        if (std::memcmp(head.data(), h2_preface.data(), n) != 0) {
            result = first_bytes::http1;
            break;
        }
        if (n == h2_preface.size()) {
            result = first_bytes::h2;
            break;
        }
        // A prefix of the preface so far: wait for the rest (the deadline still applies).
        pause.expires_after(std::chrono::milliseconds(5));
        co_await pause.async_wait(use_tuple);
        if (limit.fired())
            break;
    }
    limit.disarm();
    co_return result;
}

asio::awaitable<void> serve_h2_plain(gateway_context& ctx, worker& w, tcp::socket socket, client_info client)
{
    counted_connection counted(ctx.stats);
    beast::tcp_stream stream(std::move(socket));
    h2_connection<beast::tcp_stream> connection(ctx, w, stream, std::move(client));
    co_await connection.run();
    // A client still sending when the GOAWAY went out would otherwise get a reset that can
    // destroy the GOAWAY before it reads it.
    co_await lingering_close(stream, {std::chrono::seconds(1), 1024 * 1024});
}

asio::awaitable<void> serve_h2_over_tls(gateway_context& ctx, worker& w, tls_stream& stream,
                                        client_info client)
{
    h2_connection<tls_stream> connection(ctx, w, stream, std::move(client));
    co_await connection.run();
}

} // namespace idemgate::gateway::detail
