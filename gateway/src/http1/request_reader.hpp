// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading one request from a client connection (the HTTP/1.1 loop, http_connection_impl.hpp, is
// built on it): the wait for its first byte, its head as received, its body. A head of the common
// shape is read without Beast's parser (plain_head.hpp); any other head by Beast's, fed from the
// connection's buffer.
#include "transport/connection_deadline.hpp"
#include "transport/wire.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/head_facts.hpp>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/plain_head.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <idemgate/gateway/span_parser.hpp>
#include <string>

namespace idemgate::gateway::detail {

template<class Stream>
class request_reader {
public:
    using parser_type = span_request_parser<http::string_body>;

protected:
    explicit request_reader(Stream& stream) : stream_(stream), deadline_(stream.get_executor()) {}

    boost::asio::ip::tcp::socket& socket() { return boost::beast::get_lowest_layer(stream_).socket(); }

    // Waits for the first byte of the next request under the idle timeout; the header timeout
    // starts only once a request has begun. An idle connection is closed without an answer.
    // A new connection's first request waits under header_read instead: a client that connects
    // and never sends a byte must not hold a connection slot for the keep-alive time.
    boost::asio::awaitable<bool> wait_for_request(const config::config& cfg, bool first_request)
    {
        if (buffer_.size() > 0)
            co_return true;
        boost::beast::get_lowest_layer(stream_).expires_never();
        deadline_.arm(socket(), first_request ? cfg.timeouts.header_read : cfg.timeouts.idle);
        auto [ec, n] = co_await ready_read_some(io_object(stream_), buffer_.prepare(16 * 1024), use_tuple);
        deadline_.disarm();
        if (!ec)
            buffer_.commit(n);
        co_return !ec;
    }

    // Reads the header by feeding the parser from the buffer ourselves, for three reasons:
    // - every byte the parser consumed counts against max_header_bytes: Beast 1.81 applies
    //   header_limit to the start line and to the fields separately and per buffer, so many small
    //   fields arriving at once passed at about twice the limit;
    // - obs-fold (a line starting with SP/HT) is refused: Beast joins it to the previous value,
    //   which let "Transfer-Encoding:\r\n chunked" frame a body (RFC 9112 5.2; nginx refuses too);
    // - empty lines before the request line are skipped (RFC 9112 2.2).
    // A whole head of the common shape in the buffer at the start is read without the parser, into
    // its message; the parser is then left unused. Either way the head's facts (facts()) are
    // filled once, at the end.
    boost::asio::awaitable<boost::system::error_code> read_header(parser_type& parser,
                                                                  const config::config& cfg)
    {
        namespace asio = boost::asio;
        using boost::system::error_code;
        std::size_t header_bytes = 0;
        bool line_start = false; // the last consumed byte ended a line
        error_code ec;
        boost::beast::get_lowest_layer(stream_).expires_never();
        deadline_.arm(socket(), cfg.timeouts.header_read);
        for (;;) {
            if (buffer_.size() > 0) {
                std::string_view pending(static_cast<const char*>(buffer_.data().data()), buffer_.size());
                if (header_bytes == 0 && !parser.got_some()) {
                    auto skip = pending.find_first_not_of("\r\n");
                    skip = skip == std::string_view::npos ? pending.size() : skip;
                    if (skip > 0) {
                        header_bytes += skip;
                        buffer_.consume(skip);
                        if (header_bytes > cfg.limits.max_header_bytes) {
                            ec = http::error::header_limit;
                            break;
                        }
                        continue;
                    }
                    if (take_plain(pending, cfg.limits, parser.get()))
                        break; // the facts are the plain reader's
                }
                if (has_obs_fold(pending, line_start)) {
                    ec = http::error::bad_field;
                    break;
                }
                error_code pec;
                auto used = parser.put(buffer_.data(), pec);
                line_start = used > 0 ? pending[used - 1] == '\n' : line_start;
                received_.append(pending.data(), used); // forwarded as received (head_splice.hpp)
                buffer_.consume(used);
                header_bytes += used;
                if (header_bytes > cfg.limits.max_header_bytes) {
                    ec = http::error::header_limit;
                    break;
                }
                if (pec && pec != http::error::need_more) {
                    ec = pec;
                    break;
                }
                if (parser.is_header_done())
                    break;
                if (!pec && used > 0)
                    continue;
                if (buffer_.size() >= cfg.limits.max_header_bytes + 4) {
                    ec = http::error::header_limit;
                    break;
                }
            }
            auto [rec, n] =
                co_await ready_read_some(io_object(stream_), buffer_.prepare(16 * 1024), use_tuple);
            if (rec) {
                ec = rec == asio::error::eof
                         ? error_code(parser.got_some() || header_bytes > 0 ? http::error::partial_message
                                                                            : http::error::end_of_stream)
                         : rec;
                break;
            }
            buffer_.commit(n);
        }
        deadline_.disarm();
        if (ec == asio::error::operation_aborted && deadline_.fired())
            ec = boost::beast::error::timeout;
        else if (!ec && parser.is_header_done())
            facts_ = facts_of(parser);
        co_return ec;
    }

    // What read_header found, whichever reader read the head (head_facts.hpp).
    head_facts& facts() noexcept { return facts_; }

    // Takes the body (facts().body_pending) from the buffer when all of it is there: true, `ec`
    // says how it went. Bytes after it stay in the buffer (a pipelined request).
    bool body_buffered(parser_type& parser, boost::system::error_code& ec)
    {
        if (facts_.chunked)
            return parse_buffered(parser, buffer_, ec);
        const auto length = static_cast<std::size_t>(*facts_.content_length);
        if (buffer_.size() < length)
            return false;
        ec = {};
        take_known_length(buffer_, length, parser.get().body());
        return true;
    }

    // Reads the rest of the body (when body_buffered could not) under `timeout` (the route's
    // body_read): a chunked one through Beast's parser, one of known length as the answer side
    // reads it.
    boost::asio::awaitable<boost::system::error_code> read_body(parser_type& parser,
                                                                std::chrono::milliseconds timeout)
    {
        namespace asio = boost::asio;
        boost::system::error_code ec;
        boost::beast::get_lowest_layer(stream_).expires_never();
        deadline_.arm(socket(), timeout);
        if (facts_.chunked) {
            auto [rec, n] = co_await http::async_read(io_object(stream_), buffer_, parser, use_tuple);
            ec = rec;
        } else {
            const auto length = static_cast<std::size_t>(*facts_.content_length);
            ec = co_await read_known_length(stream_, buffer_, length);
            if (!ec)
                take_known_length(buffer_, length, parser.get().body());
        }
        deadline_.disarm();
        if (ec == asio::error::operation_aborted && deadline_.fired())
            ec = boost::beast::error::timeout;
        co_return ec;
    }

    // Ready for the next request.
    void next_request()
    {
        facts_ = {};
        received_.clear();
    }

    Stream& stream_;
    deadline deadline_;
    boost::beast::flat_buffer buffer_;
    std::string received_; // the current request's head as received

private:
    static constexpr auto use_tuple = await_tuple<Stream>;

    // A whole head of the common shape at the start of `pending`, read into `req` (the parser's
    // message) and consumed; false, nothing done, for any other.
    bool take_plain(std::string_view pending, const config::limits_config& limits,
                    typename parser_type::value_type& req)
    {
        const auto scan = scan_head(pending);
        if (scan.end == 0 || scan.folded ||
            !read_plain_request(pending.substr(0, scan.end),
                                {limits.max_header_bytes, limits.max_request_body}, req.base(), facts_))
            return false;
        received_.append(pending.data(), scan.end);
        buffer_.consume(scan.end);
        return true;
    }

    head_facts facts_; // the current request's, filled at the end of read_header
};

} // namespace idemgate::gateway::detail
