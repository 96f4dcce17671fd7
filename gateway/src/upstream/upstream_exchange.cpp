// SPDX-License-Identifier: Apache-2.0
// One request's exchange with the upstream over a pooled connection (upstream_pool.cpp): write,
// read the answer past interim 1xx, hand the connection back, and the one retry a reused
// connection allows.
#include "transport/wire.hpp"
#include "upstream/large_answer.hpp"
#include "upstream/upstream_connection.hpp"
#include "upstream/upstream_pool.hpp"
#include "upstream/upstream_tls.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <cstring>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/recycled.hpp>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/response_rules.hpp>
#include <iterator>
#include <openssl/ssl.h>
#include <optional>
#include <type_traits>

namespace idemgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;

namespace {

bool is_idempotent(http::verb v)
{
    switch (v) {
    case http::verb::get:
    case http::verb::head:
    case http::verb::options:
    case http::verb::trace:
    case http::verb::put:
    case http::verb::delete_: return true;
    default: return false;
    }
}

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
        if (scan.end > 0 || bytes.size() > limit)
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
// reason phrase into `buffer`.
response_violation vet_head(beast::flat_buffer& buffer, const head_scan& scan)
{
    const auto head_end = scan.end;
    if (head_end == 0)
        return response_violation::none; // too long: the parser refuses it
    std::string_view bytes(static_cast<const char*>(buffer.data().data()), buffer.size());
    auto head = bytes.substr(0, head_end);
    // Folded lines were looked for with the end (most heads have none).
    if (scan.folded)
        if (auto v = check_response_head(head); v != response_violation::none)
            return v;
    if (lacks_reason_separator(head)) {
        std::string fixed;
        fixed.reserve(bytes.size() + 1);
        fixed.append(bytes.substr(0, reason_separator_at))
            .append(" ")
            .append(bytes.substr(reason_separator_at));
        buffer.consume(buffer.size());
        auto space = buffer.prepare(fixed.size());
        std::memcpy(space.data(), fixed.data(), fixed.size());
        buffer.commit(fixed.size());
    }
    return response_violation::none;
}

bool has_body(unsigned status, bool head_request)
{
    return !head_request && status >= 200 && status != 204 && status != 304;
}

} // namespace

// Not a coroutine: it hands over the coroutine of the pool's stream type, so a plain exchange
// costs no extra frame.
asio::awaitable<void> upstream_pool::exchange(const http::request<http::string_body, pooled_fields>& req,
                                              const request_buffers& buffers, bool head_request,
                                              upstream_result& result)
{
    if (tls_)
        return exchange_over<tls_connection_ptr>(req, buffers, head_request, result);
    return exchange_over<plain_connection>(req, buffers, head_request, result);
}

asio::awaitable<void> upstream_pool::exchange(const http::request<http::string_body, pooled_fields>& req,
                                              bool head_request, std::string& scratch,
                                              upstream_result& result)
{
    auto buffers = message_buffers(req, scratch);
    co_await exchange(req, buffers, head_request, result);
}

template<class Connection>
asio::awaitable<void> upstream_pool::exchange_over(const http::request<http::string_body, pooled_fields>& req,
                                                   const request_buffers& buffers, bool head_request,
                                                   upstream_result& result)
{
    // timeouts.upstream_response bounds the whole exchange (writing the request and reading the
    // answer), so that lock_ttl > upstream_connect + upstream_response keeps the lock alive to
    // the end. Connecting has its own deadline and is not counted.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    for (int attempt = 0; attempt < 2; ++attempt) {
        // Streams live behind unique_ptr: moving a beast::tcp_stream allocates a new impl.
        // A second attempt (the reused connection was dead) takes a new connection.
        const auto reuse = attempt > 0                   ? idle_reuse::never
                           : is_idempotent(req.method()) ? idle_reuse::recent_as_is
                                                         : idle_reuse::checked;
        std::shared_ptr<address_slot> picked;
        auto got = take_ready<Connection>(reuse, picked);
        if (!got.conn)
            got = co_await acquire<Connection>(reuse, picked);
        result.address = std::move(got.last_address);
        if (got.ec) {
            result.ec = got.ec;
            co_return;
        }
        Connection conn = std::move(got.conn);
        bool reused = got.reused;
        address_slot& slot = *got.slot.get();
        auto& stream = detail::stream_of(conn);
        auto& tcp_layer = beast::get_lowest_layer(stream);
        if (reused)
            metrics_.upstream_connections_reused.fetch_add(1, std::memory_order_relaxed);

        if (!deadline)
            deadline = std::chrono::steady_clock::now() + config_.timeouts.upstream_response;
        // The deadline is kept by the pool's watch (exchange_watch.hpp), which sets no timer per
        // request, not by the stream's own timer. Declared after `conn`, so that it is disarmed
        // before the connection goes.
        exchange_watch::entry watched;
        watched.arm(watch_, tcp_layer.socket(), *deadline);
        // On plain TCP what the socket takes at once goes without an asynchronous write; the rest
        // (and all of it over TLS) through write_rest, which keeps this frame small enough for
        // Asio to recycle.
        using stream_type = std::decay_t<decltype(stream)>;
        error_code wec;
        std::size_t sent = 0;
        if (std::is_same_v<stream_type, beast::tcp_stream>)
            sent = send_now(tcp_layer.socket(), buffers, wec);
        if (!wec && sent < asio::buffer_size(buffers))
            wec = co_await write_rest(stream, buffers, sent);
        if (watched.fired())
            wec = beast::error::timeout;
        if (wec) {
            if (reused)
                continue;
            if (wec == beast::error::timeout) {
                metrics_.upstream_timeouts.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_timeout);
            } else {
                metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_connect);
            }
            co_return;
        }

        result.sent = true;
        beast::flat_buffer buffer = take_buffer();
        // Interim 1xx answers (103 Early Hints, a stray 100) are read past, never forwarded as
        // final (RFC 9110 15.2); the deadline covers them all.
        // The parser lives in a block this thread reuses, not in this coroutine's frame (a frame
        // that large is not one Asio recycles).
        using parser_type = http::response_parser<http::string_body, field_allocator<char>>;
        recycled_ptr<parser_type> parser_storage;
        error_code rec;
        response_violation refused = response_violation::none;
        std::size_t header_fields = 0;
        constexpr std::size_t header_limit = 64 * 1024;
        // An answer up to limits.max_record_body is read whole; one whose length is unknown (chunked,
        // or until the connection closes) or larger is read piece by piece (`by_piece`), and one
        // over max_record_body is handed on with its connection to be passed on as it arrives.
        bool by_piece = false;
        bool announced_too_large = false;
        const auto record_limit = config_.limits.max_record_body;
        const auto response_limit = config_.limits.max_response_body;
        for (int interim = 0; interim < 8; ++interim) {
            parser_storage = make_recycled<parser_type>();
            auto& p = *parser_storage;
            p.body_limit(boost::none); // the sizes are checked here, with the answer's head at hand
            p.header_limit(header_limit);
            if (head_request)
                p.skip(true);
            head_scan scan;
            rec = co_await read_head(stream, buffer, header_limit, scan);
            if (rec)
                break;
            refused = vet_head(buffer, scan);
            if (refused != response_violation::none)
                break;
            // The whole head is buffered (or more than the limit, which the parser refuses).
            buffer.consume(p.put(buffer.data(), rec));
            if (!rec && !p.is_header_done())
                rec = http::error::header_limit;
            unsigned status = p.get().result_int();
            if (!rec && status >= 200) {
                header_fields = static_cast<std::size_t>(std::distance(p.get().begin(), p.get().end()));
                if (has_body(status, head_request))
                    refused = check_response_framing(p.get());
                if (refused != response_violation::none)
                    break;
                auto announced = p.content_length();
                if (!p.is_done() && announced && *announced > response_limit) {
                    announced_too_large = true;
                } else if (!p.is_done() && announced && *announced <= record_limit) {
                    if (!parse_buffered(p, buffer, rec)) {
                        auto [body_ec, body_read] =
                            co_await http::async_read(io_object(stream), buffer, p, await_tuple<stream_type>);
                        rec = body_ec;
                    }
                } else if (!p.is_done()) {
                    by_piece = true;
                }
            }
            if (rec || status >= 200)
                break;
            if (status == 101 || interim == 7) {
                // No Upgrade was forwarded, so a 101 (or an endless run of 1xx) is a protocol error.
                rec = http::error::bad_version;
                break;
            }
        }
        auto& parser = *parser_storage;
        // Past the deadline the watch shut the connection down: whatever the reads ended with,
        // the answer did not come in time.
        watched.disarm();
        if (watched.fired()) {
            refused = response_violation::none;
            rec = beast::error::timeout;
        }
        if (refused != response_violation::none) {
            // Framing the gateway cannot read exactly: nothing of it is kept or passed on, and
            // the connection is not reused.
            metrics_.upstream_bad_responses.fetch_add(1, std::memory_order_relaxed);
            log::warn("upstream answer refused: its framing cannot be read exactly",
                      {{"upstream", fleet_->name()}, {"reason", describe(refused)}});
            result.ec = make_error_code(error::upstream_protocol);
            co_return;
        }
        if (rec) {
            // Only an idempotent request may be sent again once it was written (RFC 9110 9.2.2):
            // the upstream may have run a POST that died without an answer. That holds across
            // addresses too: a written POST is never sent to another member of the fleet.
            bool nothing_received = !parser.got_some() && buffer.size() == 0;
            if (reused && nothing_received && is_idempotent(req.method()) &&
                (rec == http::error::end_of_stream || rec == asio::error::eof ||
                 rec == asio::error::connection_reset))
                continue;
            if (rec == beast::error::timeout) {
                metrics_.upstream_timeouts.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_timeout);
            } else if (rec == http::error::body_limit) {
                metrics_.upstream_bad_responses.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_too_large);
            } else {
                metrics_.upstream_bad_responses.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_protocol);
            }
            co_return;
        }
        if (announced_too_large || by_piece) {
            // The rest under the same deadline, kept by the stream's timer (this path is rare,
            // and its connection may be handed on with the answer).
            tcp_layer.expires_at(*deadline);
            bool ended = co_await detail::read_by_piece(conn, stream, buffer, parser, result, header_fields,
                                                        announced_too_large, config_.limits, metrics_);
            if (ended)
                co_return;
            tcp_layer.expires_never(); // whole: the connection may go back to the pool
        } else {
            // Moved out of the parser in place (release() makes a temporary first). Only a
            // chunked answer can have trailer fields.
            result.response = std::move(parser.get());
            if (parser.chunked())
                detail::drop_trailer_fields(result.response, header_fields);
        }
        if constexpr (!std::is_same_v<Connection, plain_connection>) {
            // The session to offer on the next connect: read now, since a TLS 1.3 server sends
            // its tickets after the handshake, and they were read with the answer.
            // A copy: OpenSSL marks a connection's own session not resumable when the
            // connection is freed without a close_notify (ssl_clear_bad_session), which is how
            // pooled HTTP connections end; the copy stays resumable.
            if (!reused) {
                SSL_SESSION* session = SSL_get1_session(stream.native_handle());
                if (session && SSL_SESSION_is_resumable(session) == 1)
                    slot.session.reset(SSL_SESSION_dup(session));
                if (session)
                    SSL_SESSION_free(session);
            }
        }
        // The parser's flags: Connection and the version as read, and an answer delimited by
        // the end of the connection is never reused.
        if (parser.keep_alive() && buffer.size() == 0) {
            put_idle(slot, std::move(conn));
        } else {
            error_code ignored;
            tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
            tcp_layer.socket().close(ignored);
        }
        give_back(std::move(buffer));
        co_return;
    }
    // Both attempts failed on write: the upstream is not taking requests.
    metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
    result.ec = make_error_code(error::upstream_connect);
    co_return;
}

} // namespace idemgate::gateway
