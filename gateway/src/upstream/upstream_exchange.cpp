// SPDX-License-Identifier: Apache-2.0
// One request's exchange with the upstream over a pooled connection (upstream_pool.cpp): write,
// read the answer past interim 1xx, hand the connection back, and the one retry a reused
// connection allows.
#include "transport/wire.hpp"
#include "upstream/answer_read.hpp"
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
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/response_rules.hpp>
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

} // namespace

// Not a coroutine: it hands over the coroutine of the pool's stream type, so a plain exchange
// costs no extra frame.
asio::awaitable<void> upstream_pool::exchange(const upstream_call& call, upstream_result& result)
{
    if (tls_)
        return exchange_over<tls_connection_ptr>(call, result);
    return exchange_over<plain_connection>(call, result);
}

template<class Connection>
asio::awaitable<void> upstream_pool::exchange_over(const upstream_call& call, upstream_result& result)
{
    const auto& req = call.req;
    const auto& buffers = call.buffers;
    const auto& timeouts = call.timeouts;
    const bool head_request = call.head_request;
    // The route's upstream_response bounds the whole exchange (writing the request and reading
    // the answer), so that lock_ttl > upstream_connect + upstream_response keeps the lock alive to
    // the end. Connecting has its own deadline and is not counted.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    const bool may_resend = call.resend == resend_policy::idempotent_methods && is_idempotent(req.method());
    for (int attempt = 0; attempt < 2; ++attempt) {
        // Streams live behind unique_ptr: moving a beast::tcp_stream allocates a new impl.
        // A second attempt (the reused connection was dead) takes a new connection.
        const auto reuse = attempt > 0  ? idle_reuse::never
                           : may_resend ? idle_reuse::recent_as_is
                                        : idle_reuse::checked;
        std::shared_ptr<address_slot> picked;
        auto got = take_ready<Connection>(reuse, picked);
        if (!got.conn)
            got = co_await acquire<Connection>(reuse, picked, timeouts.upstream_connect);
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
            deadline = std::chrono::steady_clock::now() + timeouts.upstream_response;
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
        detail::answer_read answer;
        answer.head_request = head_request;
        answer.limits = &config_.limits;
        co_await detail::read_answer(stream, buffer, result, answer);
        auto& rec = answer.ec;
        auto& refused = answer.refused;
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
            result.began_status = answer.began_status(buffer);
            co_return;
        }
        if (rec) {
            // Only an idempotent request may be sent again once it was written (RFC 9110 9.2.2),
            // and never one of a method its route guards: the upstream may have run a POST, or a
            // guarded PUT, that died without an answer. That holds across addresses too: such a
            // written request is never sent to another member of the fleet.
            if (reused && answer.nothing_received(buffer) && may_resend &&
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
            result.began_status = answer.began_status(buffer);
            co_return;
        }
        // Either read in full into result.response by read_answer, or read here piece by piece.
        if (answer.announced_too_large || answer.by_piece) {
            // The rest under the same deadline, kept by the stream's timer (this path is rare,
            // and its connection may be handed on with the answer).
            tcp_layer.expires_at(*deadline);
            // Named first: GCC 12 miscompiles a braced initializer inside a co_await expression.
            detail::answer_wire<Connection, std::decay_t<decltype(stream)>> wire{conn, stream, buffer};
            detail::piece_bounds bounds{config_.limits, metrics_};
            bool ended = co_await detail::read_by_piece(wire, answer, result, bounds);
            if (ended)
                co_return;
            tcp_layer.expires_never(); // whole: the connection may go back to the pool
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
        // The head's facts: Connection and the version as read, and an answer delimited by the
        // end of the connection is never reused.
        if (answer.facts.keep_alive && buffer.size() == 0) {
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
