// SPDX-License-Identifier: Apache-2.0
#pragma once
// An upstream answer read piece by piece (upstream_exchange.cpp): one whose length is unknown
// (chunked, or until the connection closes) or over limits.max_record_body. Its first
// max_record_body + 1 bytes are read under the exchange's deadline; an answer larger than that
// is handed on with its connection (streamed_body) to be passed on as it arrives.
#include "upstream/upstream_connection.hpp"
#include "upstream/upstream_pool.hpp"

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <idemgate/gateway/span_parser.hpp>
#include <memory>
#include <string>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::asio::ip::tcp;
using boost::system::error_code;

// Beast 1.81 appends a chunked response's trailer fields to the header fields. Trailers are
// dropped: never recorded, never replayed, never sent to the client (the gateway re-frames the
// body with Content-Length, which has no trailer section) - nginx does the same by default.
inline void drop_trailer_fields(http::response<http::string_body, span_fields>& res,
                                std::size_t header_fields)
{
    auto it = res.begin();
    for (std::size_t i = 0; i < header_fields && it != res.end(); ++i)
        ++it;
    while (it != res.end())
        it = res.erase(it);
}

using body_parser = span_response_parser<http::buffer_body>;

// What a body is read through: the bytes read past its head so far, and the parser.
struct body_source {
    beast::flat_buffer& buffer;
    body_parser& parser;
};

// Appends at most `most` more body bytes read from `stream` through `from` to `out`.
template<class Stream>
asio::awaitable<error_code> read_body_piece(Stream& stream, body_source from, std::string& out,
                                            std::size_t most)
{
    auto& buffer = from.buffer;
    auto& p = from.parser;
    auto old = out.size();
    out.resize(old + most);
    p.get().body().data = out.data() + old;
    p.get().body().size = most;
    p.get().body().more = true;
    auto [ec, n] = co_await http::async_read_some(stream, buffer, p, await_tuple<Stream>);
    out.resize(old + most - p.get().body().size);
    if (ec == http::error::need_buffer)
        ec = {};
    co_return ec;
}

// The body of an answer too large to record, on its connection (closed when this goes).
template<class Connection>
class streamed_body final : public answer_body {
public:
    streamed_body(Connection conn, beast::flat_buffer&& buffer, std::unique_ptr<body_parser> parser)
        : conn_(std::move(conn)), buffer_(std::move(buffer)), parser_(std::move(parser))
    {
    }
    ~streamed_body() override
    {
        error_code ignored;
        auto& tcp_layer = beast::get_lowest_layer(detail::stream_of(conn_));
        tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
        tcp_layer.socket().close(ignored);
    }

    asio::awaitable<error_code> read_some(std::string& out, bool& done,
                                          std::chrono::milliseconds timeout) override
    {
        out.clear();
        done = parser_->is_done();
        if (done)
            co_return error_code{};
        auto& stream = detail::stream_of(conn_);
        beast::get_lowest_layer(stream).expires_after(timeout);
        const body_source from{buffer_, *parser_};
        auto ec = co_await read_body_piece(stream, from, out, piece_size);
        done = !ec && parser_->is_done();
        co_return ec;
    }

private:
    static constexpr std::size_t piece_size = 64 * 1024;
    Connection conn_;
    beast::flat_buffer buffer_;
    std::unique_ptr<body_parser> parser_;
};

// Where read_by_piece reads from: the connection (handed on with an answer passed on as it
// arrives), its stream, and the bytes already read past the head.
template<class Connection, class Stream>
struct answer_wire {
    Connection& conn;
    Stream& stream;
    beast::flat_buffer& buffer;
};

// What bounds read_by_piece and counts what it refuses.
struct piece_bounds {
    const config::limits_config& limits;
    metrics& stats;
};

// An answer read piece by piece (its length unknown, or over limits.max_record_body): its first
// max_record_body + 1 bytes, enough to tell an answer to record from one to pass on, still under
// the exchange's deadline. `answer` is the head as read_answer left it (its parser, its facts,
// whether its announced length is over max_response_body). True when the exchange ends here: an
// error, an answer over max_response_body (refused), or one handed on with its connection to be
// passed on as it arrives; false when the whole answer is in `result` and the connection can go
// back to the pool. Its own coroutine, so that the exchange's frame stays small enough for Asio
// to recycle.
template<class Connection, class Stream, class Answer>
asio::awaitable<bool> read_by_piece(answer_wire<Connection, Stream> wire, Answer& answer,
                                    upstream_result& result, piece_bounds bounds)
{
    auto& conn = wire.conn;
    auto& stream = wire.stream;
    auto& buffer = wire.buffer;
    auto& parser = *answer.parser;
    const auto header_fields = answer.facts.header_fields;
    const bool announced_too_large = answer.announced_too_large;
    const auto& limits = bounds.limits;
    auto& stats = bounds.stats;
    const auto record_limit = limits.max_record_body;
    if (auto announced = parser.content_length())
        result.length = *announced;
    auto bp = std::make_unique<body_parser>(std::move(parser));
    std::string body;
    if (result.length)
        body.reserve(std::min<std::size_t>(*result.length, record_limit + 1));
    error_code rec;
    const body_source from{buffer, *bp};
    while (!announced_too_large && !bp->is_done() && body.size() <= record_limit) {
        rec = co_await read_body_piece(stream, from, body,
                                       std::min<std::size_t>(64 * 1024, record_limit + 1 - body.size()));
        if (rec)
            break;
    }
    if (rec) {
        stats.upstream_bad_responses.fetch_add(1, std::memory_order_relaxed);
        result.ec = make_error_code(rec == beast::error::timeout ? error::upstream_timeout
                                                                 : error::upstream_protocol);
        // Its head was read: the answer began, and its status is the upstream's outcome.
        result.began_status = bp->get().result_int();
        co_return true;
    }
    http::response_header<span_fields> head = bp->get().base(); // a copy: the parser may read on
    result.response = http::response<http::string_body, span_fields>(std::move(head));
    drop_trailer_fields(result.response, header_fields);
    if (announced_too_large || body.size() > limits.max_response_body) {
        // Over max_response_body before any byte went to the client: refused with 502.
        stats.upstream_bad_responses.fetch_add(1, std::memory_order_relaxed);
        result.ec = make_error_code(error::upstream_too_large);
        result.head_only = true;
        co_return true; // the connection closes with `conn`
    }
    result.response.body() = std::move(body);
    if (!bp->is_done()) {
        result.rest =
            std::make_unique<streamed_body<Connection>>(std::move(conn), std::move(buffer), std::move(bp));
        co_return true;
    }
    result.length.reset();
    co_return false;
}

} // namespace idemgate::gateway::detail
