// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading an upstream's answer (upstream_exchange.cpp): its head as received, checked before it is
// parsed; the common shape read without Beast's parser (plain_head.hpp), any other by Beast's;
// either way the head's facts (head_facts.hpp) are filled once and a body of known length is read
// the same way (read_known_length, transport/wire.hpp).
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
#include <idemgate/gateway/head_facts.hpp>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/response_rules.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <idemgate/gateway/span_parser.hpp>

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
            co_await ready_read_some(io_object(stream), buffer.prepare(16 * 1024), await_tuple<Stream>);
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

using parser_type = span_response_parser<http::string_body>;

// How an answer was read: its head's facts (head_facts.hpp), whichever reader read it, and the
// answer in full in `result.response`, or its head in Beast's parser to be read piece by piece
// (or `ec`, `refused`).
struct answer_read {
    // What the caller asks: the request was HEAD (no body follows its answer), and the limits on
    // the answer's head and body. Set before read_answer.
    bool head_request = false;
    const config::limits_config* limits = nullptr;

    error_code ec;
    response_violation refused = response_violation::none;
    // Beast's parser, in a block this thread reuses, not in a coroutine frame (a frame that large
    // is not one Asio recycles).
    recycled_ptr<parser_type> parser;
    head_facts facts; // the final answer's, filled once its head is read
    // An answer up to limits.max_record_body is read whole; one whose length is unknown
    // (chunked, or until the connection closes) or larger is read piece by piece (`by_piece`),
    // and one over max_record_body is handed on with its connection to be passed on as it arrives.
    bool by_piece = false;
    bool announced_too_large = false;
    // The status of the final answer whose head was read, or 0.
    unsigned final_status = 0;
    // The final status line seen in the buffer before Beast's parser took the head (which it
    // may consume before it fails): for began_status.
    unsigned seen_status = 0;

    // After a failed read: the status of the final answer that began (upstream_result::
    // began_status), from what was read of it; `buffer` holds what was not consumed.
    unsigned began_status(const beast::flat_buffer& buffer) const
    {
        if (final_status)
            return final_status;
        if (parser && parser->is_header_done())
            return 0; // an interim answer
        if (seen_status)
            return seen_status;
        return arrived_final_status(
            std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()));
    }
    // Whether nothing of an answer was received (a reused connection that was dead).
    bool nothing_received(const beast::flat_buffer& buffer) const
    {
        return final_status == 0 && (!parser || !parser->got_some()) && buffer.size() == 0;
    }
};

// A head of the common shape read without Beast's parser (plain_head.hpp) into `res`, which must be
// new, its facts into `out.facts`, and consumed from `buffer`; false, nothing done, for any other.
bool take_plain_answer(beast::flat_buffer& buffer, std::size_t head_end,
                       http::response<http::string_body, span_fields>& res, answer_read& out);

// What take_parsed_answer made of a head.
enum class parsed_head {
    in_full, // a final answer to read in full: its head is in result.response
    interim, // an interim answer (1xx): the final one is still to come
    done,    // read_answer ends: an error, a refusal, an answer to read piece by piece
};

// A head Beast's parser reads from `buffer` (whole, or more than the limit: then refused). Its
// own function, so that read_answer's frame stays small; `last_interim`: no further interim
// answer is accepted.
parsed_head take_parsed_answer(beast::flat_buffer& buffer, bool last_interim, upstream_result& result,
                               answer_read& out);

// Reads the final answer (past interim 1xx answers: 103 Early Hints, a stray 100 are never
// forwarded as final, RFC 9110 15.2) into `out` (its head_request and limits set), and into
// `result.response` when it is read in full here; the caller's deadline covers it all.
template<class Stream>
asio::awaitable<void> read_answer(Stream& stream, beast::flat_buffer& buffer, upstream_result& result,
                                  answer_read& out)
{
    const std::size_t header_limit = out.limits->max_response_header_bytes;
    for (int interim = 0; interim < 8; ++interim) {
        out.parser.reset();
        head_scan scan;
        out.ec = co_await read_head(stream, buffer, header_limit, scan);
        if (out.ec)
            co_return;
        out.refused = vet_head(buffer, scan);
        if (out.refused != response_violation::none)
            co_return;
        if (out.head_request || !take_plain_answer(buffer, scan.end, result.response, out)) {
            const auto parsed = take_parsed_answer(buffer, interim == 7, result, out);
            if (parsed == parsed_head::done)
                co_return;
            if (parsed == parsed_head::interim)
                continue;
        }
        // A final answer to read in full, its head in result.response, whichever reader read it.
        out.final_status = result.response.result_int();
        if (!out.facts.body_pending)
            co_return;
        // The body of the announced length, as Beast's parser reads it: bytes the upstream sent
        // after it stay in `buffer` (and the connection is not reused).
        const auto length = static_cast<std::size_t>(*out.facts.content_length);
        auto& body = result.response.body();
        body.reserve(length);
        const auto missing = take_known_length(buffer, length, body);
        if (missing == 0)
            co_return;
        out.ec = co_await read_known_length(stream, buffer, missing);
        if (!out.ec)
            take_known_length(buffer, missing, body);
        co_return;
    }
}

} // namespace idemgate::gateway::detail
