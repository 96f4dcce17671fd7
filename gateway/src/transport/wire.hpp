// SPDX-License-Identifier: Apache-2.0
#pragma once
// Writing and reading messages on the hot path. Beast's generic serializer walks nested buffer-sequence
// views, a large share of a first execution's instructions; the gateway's messages are always Content-Length
// framed string bodies, so it renders the head into one reusable string and sends head + body in one gather
// write. A body that arrived with its head is parsed where it lies, without a read operation.
#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <idemgate/common/ready_read.hpp>
#include <idemgate/common/send_now.hpp>
#include <string>
#include <type_traits>

namespace idemgate::gateway {

namespace http = boost::beast::http;

// The completion token connection code awaits an operation on `Stream` with, as (error_code,
// ...) tuples. On a plain TCP stream the operation is awaited directly (asio::deferred): no
// coroutine frame of its own per operation, as use_awaitable makes, and fewer executor copies.
// Beast 1.81's ssl_stream declares its operations' return type the older way, which only
// use_awaitable satisfies.
template<class Stream>
inline constexpr auto await_tuple = [] {
    if constexpr (std::is_same_v<Stream, boost::beast::tcp_stream>)
        return boost::asio::as_tuple(boost::asio::deferred);
    else
        return boost::asio::as_tuple(boost::asio::use_awaitable);
}();

// What reads and writes without a deadline of the stream's own go through: on a plain TCP
// stream, its socket. beast::basic_stream wraps every operation in one of its own (its timer, its
// rate policy, executor copies) even with the timer off; the connection's and the exchange's
// deadlines act on the socket (deadline.hpp, exchange_watch.hpp). Other streams (TLS) as they are.
template<class Stream>
auto& io_object(Stream& stream) noexcept
{
    if constexpr (std::is_same_v<Stream, boost::beast::tcp_stream>)
        return stream.socket();
    else
        return stream;
}

// Writes `buffers` but their first `sent` bytes (already sent by send_now) on `stream`: its own
// coroutine, so that a caller whose frame is near Asio's recycling limit keeps only the awaitable.
template<class Stream, std::size_t N>
boost::asio::awaitable<boost::system::error_code>
write_rest(Stream& stream, std::array<boost::asio::const_buffer, N> buffers, std::size_t sent)
{
    consume(buffers, sent);
    auto [ec, n] = co_await boost::asio::async_write(io_object(stream), buffers, await_tuple<Stream>);
    co_return ec;
}

// Appends "METHOD target HTTP/x.y\r\n" + fields + "\r\n" (requests), or
// "HTTP/x.y code reason\r\n" + fields + "\r\n" (answers). Defined for http::fields and
// span_fields (span_fields.hpp).
template<bool isRequest, class Fields>
void render_head(const http::header<isRequest, Fields>& h, std::string& out);

// The buffers of a message: head rendered into `scratch`, then the body.
template<bool isRequest, class Fields>
std::array<boost::asio::const_buffer, 2>
message_buffers(const http::message<isRequest, http::string_body, Fields>& msg, std::string& scratch,
                bool send_body = true)
{
    scratch.clear();
    render_head(msg.base(), scratch);
    return {boost::asio::buffer(scratch),
            boost::asio::buffer(msg.body().data(), send_body ? msg.body().size() : 0)};
}

// Writes head and body with a deadline. The message must already be framed (Content-Length
// set, or no body). `scratch` is reused between calls to avoid an allocation per message.
// Stream is beast::tcp_stream or a stream layered over one (TLS): the deadline is set on the
// lowest layer.
template<class Stream, bool isRequest, class Fields>
boost::asio::awaitable<boost::system::error_code>
write_message(Stream& stream, const http::message<isRequest, http::string_body, Fields>& msg,
              std::string& scratch, std::chrono::milliseconds timeout)
{
    auto buffers = message_buffers(msg, scratch);
    boost::beast::get_lowest_layer(stream).expires_after(timeout);
    auto [ec, n] = co_await boost::asio::async_write(stream, buffers, await_tuple<Stream>);
    co_return ec;
}

// Feeds `parser` what `buffer` already holds, as http::async_read does before it reads: true
// when that ended the message (`ec` clear) or failed it (`ec` set, as the read would have
// reported it); false when the parser needs bytes not received yet (read them with
// http::async_read, which goes on from here). A small body usually arrives with its head, and
// Beast's composed read costs several thousand instructions even when it has nothing to read.
template<class Parser>
bool parse_buffered(Parser& parser, boost::beast::flat_buffer& buffer, boost::system::error_code& ec)
{
    ec = {};
    while (!parser.is_done() && buffer.size() > 0) {
        const auto used = parser.put(buffer.data(), ec);
        buffer.consume(used);
        if (ec == http::error::need_more) {
            ec = {};
            return false;
        }
        if (ec)
            return true;
        if (used == 0)
            return false;
    }
    return parser.is_done();
}

// The body of known length (`length` bytes) that begins in `buffer`, read as Beast's parser
// reads one: into `buffer` until all of it is there, so that bytes the peer sent after it stay
// there (a pipelined request, an answer's excess that keeps its connection from being reused).
// Cut short by the end of the stream, it is a partial message. The caller's deadline covers it
// (the connection's or the exchange's); the request and the answer side both read through it.
template<class Stream>
boost::asio::awaitable<boost::system::error_code>
read_known_length(Stream& stream, boost::beast::flat_buffer& buffer, std::size_t length)
{
    while (buffer.size() < length) {
        auto [ec, n] = co_await ready_read_some(
            io_object(stream), buffer.prepare(std::max<std::size_t>(length - buffer.size(), 16 * 1024)),
            await_tuple<Stream>);
        if (ec)
            co_return ec == boost::asio::error::eof ? boost::system::error_code(http::error::partial_message)
                                                    : ec;
        buffer.commit(n);
    }
    co_return boost::system::error_code{};
}

// Appends the first `length` bytes of `buffer` (at most what it holds) to `body` and consumes
// them: how many are still to come.
inline std::size_t take_known_length(boost::beast::flat_buffer& buffer, std::size_t length, std::string& body)
{
    const auto taken = std::min(length, buffer.size());
    body.append(static_cast<const char*>(buffer.data().data()), taken);
    buffer.consume(taken);
    return length - taken;
}

} // namespace idemgate::gateway
