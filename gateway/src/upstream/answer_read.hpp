// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading an upstream's answer (upstream_exchange.cpp): its head as received, checked before it is
// parsed; the common shape read without Beast's parser (plain_head.hpp), any other by Beast's.
#include "transport/wire.hpp"
#include "upstream/upstream_pool.hpp"

#include <algorithm>
#include <boost/asio/awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <cstddef>
#include <idemgate/common/recycled.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/field_allocator.hpp>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/response_rules.hpp>
#include <iterator>
#include <optional>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;

// Reads until `buffer` holds an answer's whole head (or more than `limit` bytes: the parser then
// refuses it), so the head can be checked as received before Beast parses it. `scan.end` is one
// past the head's empty line, or 0; `scan.folded`: a line of the head is folded.
template<class Stream>
asio::awaitable<error_code> read_head(Stream& stream, beast::flat_buffer& buffer, std::size_t limit,
                                      head_scan& scan)
{
    for (;;) {
        std::string_view bytes(static_cast<const char*>(buffer.data().data()), buffer.size());
        scan = scan_head(bytes);
        // A head that ended with bare LF ("\n\n") will never end with CRLF: the parser refuses
        // it now rather than the deadline later.
        if (scan.end > 0 || bytes.size() > limit || bytes.find("\n\n") != std::string_view::npos)
            co_return error_code{};
        auto [ec, n] =
            co_await io_object(stream).async_read_some(buffer.prepare(16 * 1024), await_tuple<Stream>);
        if (ec) {
            bool nothing = ec == asio::error::eof && buffer.size() == 0;
            co_return nothing ? error_code(http::error::end_of_stream) : ec;
        }
        buffer.commit(n);
    }
}

// The checks on an answer's head that Beast does not make; may insert the SP before an absent
// reason phrase into `buffer` (and move `scan.end` past it).
response_violation vet_head(beast::flat_buffer& buffer, head_scan& scan);

inline bool has_body(unsigned status, bool head_request)
{
    return !head_request && status >= 200 && status != 204 && status != 304;
}

using parser_type = http::response_parser<http::string_body, field_allocator<char>>;

// How an answer was read: in full here (`plain`, plain_head.hpp), or by Beast's parser, which
// has its head and maybe its body (or `ec`, `refused`).
struct answer_read {
    error_code ec;
    response_violation refused = response_violation::none;
    // Beast's parser, in a block this thread reuses, not in a coroutine frame (a frame that large
    // is not one Asio recycles).
    recycled_ptr<parser_type> parser;
    std::size_t header_fields = 0;
    // An answer up to limits.max_record_body is read whole; one whose length is unknown
    // (chunked, or until the connection closes) or larger is read piece by piece (`by_piece`),
    // and one over max_record_body is handed on with its connection to be passed on as it arrives.
    bool by_piece = false;
    bool announced_too_large = false;
    bool plain = false;
    bool plain_keep_alive = false;
    // The final status line seen in the buffer before Beast's parser took the head (which it
    // may consume before it fails): for began_status.
    unsigned seen_status = 0;

    // Whether the connection may carry another exchange (Connection and the version as read; an
    // answer delimited by the end of the connection never).
    bool keep_alive() const { return plain ? plain_keep_alive : parser->keep_alive(); }
    // After a failed read: the status of the final answer that began (upstream_result::
    // began_status), from what was read of it; `buffer` holds what was not consumed.
    unsigned began_status(const beast::flat_buffer& buffer, const upstream_result& result) const
    {
        if (plain)
            return result.response.result_int();
        if (parser && parser->is_header_done())
            return parser->get().result_int() >= 200 ? parser->get().result_int() : 0;
        if (seen_status)
            return seen_status;
        return arrived_final_status(
            std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()));
    }
};

// An answer of the common shape read without Beast's parser: its head into `result.response`
// with the body bytes already in `buffer`. Returns the number of body bytes still to come, or
// nothing when the head is of another shape.
std::optional<std::size_t> take_plain_answer(beast::flat_buffer& buffer, std::size_t head_end,
                                             std::size_t header_limit, std::uint64_t max_body,
                                             upstream_result& result, bool& keep_alive);

// Reads the final answer (past interim 1xx answers: 103 Early Hints, a stray 100 are never
// forwarded as final, RFC 9110 15.2) into `out`, and into `result.response` when it is read in
// full here; the caller's deadline covers it all.
template<class Stream>
asio::awaitable<void> read_answer(Stream& stream, beast::flat_buffer& buffer, bool head_request,
                                  const config::limits_config& limits, upstream_result& result,
                                  answer_read& out)
{
    const std::size_t header_limit = limits.max_response_header_bytes;
    const auto record_limit = limits.max_record_body;
    const auto response_limit = limits.max_response_body;
    for (int interim = 0; interim < 8; ++interim) {
        out.parser.reset();
        head_scan scan;
        out.ec = co_await read_head(stream, buffer, header_limit, scan);
        if (out.ec)
            co_return;
        out.refused = vet_head(buffer, scan);
        if (out.refused != response_violation::none)
            co_return;
        if (!head_request) {
            auto missing =
                take_plain_answer(buffer, scan.end, header_limit, std::min(record_limit, response_limit),
                                  result, out.plain_keep_alive);
            if (missing) {
                out.plain = true;
                if (*missing == 0)
                    co_return;
                // The rest of a body whose length was announced, read into `buffer` as Beast's
                // parser reads it, so that bytes the upstream sent after it are seen there (and
                // the connection is not reused). Cut short, it is a partial message.
                while (buffer.size() < *missing) {
                    auto [ec, n] = co_await io_object(stream).async_read_some(
                        buffer.prepare(std::max<std::size_t>(*missing - buffer.size(), 16 * 1024)),
                        await_tuple<Stream>);
                    if (ec) {
                        out.ec = ec == asio::error::eof ? error_code(http::error::partial_message) : ec;
                        co_return;
                    }
                    buffer.commit(n);
                }
                result.response.body().append(static_cast<const char*>(buffer.data().data()), *missing);
                buffer.consume(*missing);
                co_return;
            }
        }
        out.seen_status = arrived_final_status(
            std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()));
        out.parser = make_recycled<parser_type>();
        auto& p = *out.parser;
        p.body_limit(boost::none); // the sizes are checked here, with the answer's head at hand
        p.header_limit(header_limit);
        if (head_request)
            p.skip(true);
        // The whole head is buffered (or more than the limit, which the parser refuses).
        buffer.consume(p.put(buffer.data(), out.ec));
        if (!out.ec && !p.is_header_done())
            out.ec = http::error::header_limit;
        unsigned status = p.get().result_int();
        if (!out.ec && status >= 200) {
            out.header_fields = static_cast<std::size_t>(std::distance(p.get().begin(), p.get().end()));
            if (has_body(status, head_request))
                out.refused = check_response_framing(p.get());
            if (out.refused != response_violation::none)
                co_return;
            auto announced = p.content_length();
            if (!p.is_done() && announced && *announced > response_limit) {
                out.announced_too_large = true;
            } else if (!p.is_done() && announced && *announced <= record_limit) {
                if (!parse_buffered(p, buffer, out.ec)) {
                    auto [body_ec, body_read] =
                        co_await http::async_read(io_object(stream), buffer, p, await_tuple<Stream>);
                    out.ec = body_ec;
                }
            } else if (!p.is_done()) {
                out.by_piece = true;
            }
        }
        if (out.ec || status >= 200)
            co_return;
        if (status == 101 || interim == 7) {
            // No Upgrade was forwarded, so a 101 (or an endless run of 1xx) is a protocol error.
            out.ec = http::error::bad_version;
            co_return;
        }
    }
}

} // namespace idemgate::gateway::detail
