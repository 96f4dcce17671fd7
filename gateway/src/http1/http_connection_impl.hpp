// SPDX-License-Identifier: Apache-2.0
#pragma once
// The HTTP/1.1 loop of one client connection, generic over the stream (see http_connection.hpp).
// Included by exactly one file per stream type: http_connection.cpp (beast::tcp_stream) and
// tls_connection.cpp (tls_stream), each the only instantiation in its file (it keeps the files
// small; see run() for the GCC 12 trap met on the way).
#include "core/http_date.hpp"
#include "core/problem.hpp"
#include "filter/idempotency_filter.hpp"
#include "forward/big_answer.hpp"
#include "http1/answer_fields.hpp"
#include "http1/connection_support.hpp"
#include "http1/http_connection.hpp"
#include "http1/request_reader.hpp"
#include "idempotency/classify.hpp"
#include "state/exchange_epilogue.hpp"
#include "tier/local_tier.hpp"
#include "transport/connection_deadline.hpp"
#include "transport/lingering_close.hpp"
#include "transport/tls.hpp"
#include "transport/wire.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/request_id.hpp>
#include <iterator>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

namespace {

template<class Stream>
class http_connection : request_reader<Stream> {
    static constexpr auto use_tuple = await_tuple<Stream>;
    using reader = request_reader<Stream>;
    using reader::buffer_;
    using reader::deadline_;
    using reader::received_;
    using reader::socket;
    using reader::stream_;

public:
    http_connection(gateway_context& ctx, worker& w, Stream& stream, client_info client)
        : reader(stream), ctx_(ctx), env_(w.current(ctx)), cfg_(&env_->cfg()), worker_(w),
          client_(std::move(client))
    {
        ex_.client = &client_;
        ex_.scratch = &scratch_;
    }

    asio::awaitable<void> run()
    {
        for (bool first_request = true;; first_request = false) {
            if (!co_await this->wait_for_request(*cfg_, first_request))
                break;
            if (!co_await serve_one())
                break;
        }
        // GCC 12 miscompiled this coroutine when the loop above was its last statement (with or
        // without a co_return): the first resume of the frame crashed. Keep a statement here.
        if (!keep_open_ && unread_input_) {
            // Unread request bytes: closing over them would reset the connection under the answer.
            co_await lingering_close(
                beast::get_lowest_layer(stream_),
                {std::min(cfg_->timeouts.client_write, std::chrono::milliseconds(2000))});
        } else if (!keep_open_) {
            error_code ignored;
            socket().shutdown(tcp::socket::shutdown_send, ignored);
            socket().close(ignored);
        }
    }

    // A TLS stream is closed by its caller, close_notify first.
    void keep_open_at_end() { keep_open_ = true; }

private:
    // Answers a request the gateway could not read, then the connection closes. `header`: the
    // request's header when it was read (a keyed request is then told it was rejected).
    asio::awaitable<void> answer_and_close(const problem& p, std::string_view detail, unsigned version,
                                           request_type* header = nullptr)
    {
        auto& ex = ex_;
        ex.req = header;
        auto& res = ex.answer.response;
        res = make_problem(cfg_->problems.type_base(), {p, detail}, version ? version : 11, false);
        // A request whose header could not be read still gets an ID, to match log and answer.
        if (ex.ids.request_id.empty() && !cfg_->request_id_header.empty())
            new_request_id(ex.ids.request_id);
        if (!ex.ids.request_id.empty())
            res.set(cfg_->request_id_header, ex.ids.request_id);
        if (auto name = header ? status_header_for(*cfg_, *header) : std::string_view(); !name.empty())
            res.set(name, to_string(key_status::rejected));
        res.set(http::field::date, http_date_now());
        ex.write_error = co_await write_message(stream_, res, scratch_, cfg_->timeouts.client_write);
        unread_input_ = !ex.write_error;
        ex.refused = detail;
        finish_exchange(ctx_, worker_, ex);
        ex.refused = {}; // `detail` is the caller's
    }

    // Reads, checks and handles one request; false when the connection must close.
    asio::awaitable<bool> serve_one()
    {
        // Each request runs under the configuration live when its first byte arrived (reload).
        env_ = worker_.current(ctx_);
        cfg_ = &env_->cfg();
        // Parser (with the request) and exchange are the connection's: in this coroutine's frame
        // they made it too large for Asio to recycle. The exchange is cleared, not replaced: its
        // strings and answer keep their storage from request to request.
        auto& parser = parser_.emplace();
        parser.header_limit(static_cast<std::uint32_t>(cfg_->limits.max_header_bytes));
        parser.body_limit(cfg_->limits.max_request_body);
        auto& ex = ex_;
        ex.env = env_; // kept to the end of this request even if the next one reloads
        this->next_request();
        if (auto ec = co_await this->read_header(parser, *cfg_)) {
            // A body_limit here was announced by Content-Length: the header is whole.
            co_await refuse_read(ec, false, 11, ec == http::error::body_limit ? &parser.get() : nullptr);
            co_return false;
        }
        in_flight_guard guard(ctx_.stats);
        auto& header = parser.get();
        ex.started = clock_type::now();
        ex.req = &header;
        unsigned version = header.version();
        begin_exchange(ctx_, ex);

        auto violation = check_request_framing(header, version, header.target(), header.method_string());
        if (violation != framing_violation::none) {
            co_await answer_and_close(problems::bad_framing, describe(violation), version, &header);
            co_return false;
        }
        // Routes, the fingerprint and the upstream see the origin-form path of an absolute-form
        // target, and its authority as Host.
        head_facts& facts = this->facts();
        if (to_origin_form(header)) // it may add Host: counted before a chunked body's trailers
            facts.header_fields = static_cast<std::size_t>(std::distance(header.begin(), header.end()));
        if (facts.body_pending && version >= 11) {
            auto expect = find_header(header, "Expect");
            if (expect.count > 0 && beast::iequals(expect.value, "100-continue")) {
                static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
                const std::array continue_line{asio::buffer(cont.data(), cont.size())};
                const auto continue_ec = co_await write_bounded(continue_line); // under client_write
                if (continue_ec)
                    co_return false;
            }
        }
        if (facts.body_pending) {
            error_code body_ec;
            if (!this->body_buffered(parser, body_ec))
                body_ec = co_await this->read_body(parser, body_read_for(*cfg_, header.target()));
            if (body_ec) {
                co_await refuse_read(body_ec, true, version, &parser.get());
                co_return false;
            }
        }
        // Beast 1.81 merges chunked trailer fields into the header: a trailer could change the
        // key, the tenant or credentials after the checks above, so any trailer is refused.
        if (facts.chunked && static_cast<std::size_t>(std::distance(
                                 parser.get().begin(), parser.get().end())) != facts.header_fields) {
            co_await answer_and_close(problems::bad_framing, "chunked trailer fields are not accepted",
                                      version, &parser.get());
            co_return false;
        }

        bool client_keep_alive = facts.keep_alive; // from what it read, without a lookup
        request_type& req = parser.get();          // used where it was parsed; the parser is reset at the end
        // The upstream sees the ID the client gets back: a missing one is added to the forwarded
        // head (not to the parsed request), an unusable one replaced (set() erases it first).
        ex.received = {received_, {}};
        if (ex.ids.generated && ex.ids.incoming_lines == 0)
            ex.received.added_request_id = ex.ids.request_id;
        else if (ex.ids.generated)
            req.set(cfg_->request_id_header, ex.ids.request_id);
        streaming_sink sink(*this, client_keep_alive);
        ex.sink = &sink;
        handled& h = ex.answer;
        co_await handle_request(ctx_, worker_, ex);
        ex.sink = nullptr;
        // Draining is read after the request was handled: a request in flight when SIGTERM
        // arrived gets Connection: close on its answer.
        bool keep_alive =
            client_keep_alive && !h.close_after && !ctx_.draining.load(std::memory_order_relaxed);
        ex.write_error = h.write_error; // passed on as it arrived (too large to record), through `sink`
        if (!h.written)
            ex.write_error = co_await write_answer(h, req.version(), keep_alive);
        ex.bytes_out = h.written       ? h.body_bytes
                       : h.prerendered ? h.prerendered->record.body.size()
                                       : h.response.body().size();
        finish_exchange(ctx_, worker_, ex);
        const bool more = !ex.write_error && keep_alive;
        // Nothing of this request is held while the connection waits for the next one.
        parser_.reset();
        ex.clear();
        ex.env.reset();
        co_return more;
    }

    // Every answer carries this request's own ID (a replay's record never holds one, see settle()),
    // what became of its key, and Date (answer_fields.hpp). Not a coroutine: it renders the head
    // and hands back write_bounded's awaitable (one frame fewer per request).
    asio::awaitable<error_code> write_answer(handled& h, unsigned version, bool keep_alive)
    {
        if (h.prerendered) {
            scratch_.clear();
            if (!ex_.ids.request_id.empty())
                scratch_.append(cfg_->request_id_header)
                    .append(": ")
                    .append(ex_.ids.request_id)
                    .append("\r\n");
            append_answer_fields(scratch_, h, false); // a tier copy never holds Date
            return write_bounded(tier_answer_buffers(*h.prerendered, version, keep_alive, scratch_));
        }
        return write_bounded(
            answer_buffers(h, scratch_, keep_alive, {cfg_->request_id_header, ex_.ids.request_id}));
    }

    // Answers a request whose header (`body` false) or body could not be read, unless the client
    // just went away; the connection closes after it.
    asio::awaitable<void> refuse_read(error_code ec, bool body, unsigned version, request_type* header)
    {
        auto refusal = refusal_for_read(ec, body);
        if (!refusal.p)
            co_return;
        const std::string detail = refusal.detail.empty() ? ec.message() : std::string(refusal.detail);
        co_await answer_and_close(*refusal.p, detail, version, header);
    }

    // Where an answer too large to record is written as it arrives (idempotency/big_answer.hpp).
    class streaming_sink final : public answer_sink {
    public:
        streaming_sink(http_connection& c, bool client_keep_alive)
            : c_(c), client_keep_alive_(client_keep_alive)
        {
        }
        asio::awaitable<error_code> write_head(handled& h) override
        {
            const bool keep_alive =
                client_keep_alive_ && !h.close_after && !c_.ctx_.draining.load(std::memory_order_relaxed);
            auto buffers = answer_buffers(h, c_.scratch_, keep_alive,
                                          {c_.cfg_->request_id_header, c_.ex_.ids.request_id});
            co_return co_await c_.write_bounded(buffers);
        }
        asio::awaitable<error_code> write(const std::array<asio::const_buffer, 3>& parts) override
        {
            co_return co_await c_.write_bounded(parts);
        }
        void reset() noexcept override
        {
            error_code ignored;
            c_.socket().set_option(asio::socket_base::linger(true, 0), ignored);
            c_.socket().close(ignored);
        }

    private:
        http_connection& c_;
        bool client_keep_alive_;
    };

    // Writes under timeouts.client_write, on the connection's lazy deadline; on plain TCP what the
    // socket takes at once goes without an asynchronous write (send_first). `buffers` by value:
    // callers hand back this coroutine without awaiting it.
    template<class Buffers>
    asio::awaitable<error_code> write_bounded(Buffers buffers)
    {
        beast::get_lowest_layer(stream_).expires_never();
        error_code sent_ec;
        if (std::is_same_v<Stream, beast::tcp_stream> && send_first(socket(), buffers, sent_ec))
            co_return sent_ec;
        deadline_.arm(socket(), cfg_->timeouts.client_write);
        auto [ec, n] = co_await asio::async_write(io_object(stream_), buffers, use_tuple);
        deadline_.disarm();
        if (ec == asio::error::operation_aborted && deadline_.fired())
            ec = beast::error::timeout;
        co_return ec;
    }

    gateway_context& ctx_;
    std::shared_ptr<request_env> env_; // the live configuration of the current request
    const config::config* cfg_;
    worker& worker_;
    client_info client_;
    bool keep_open_ = false;
    bool unread_input_ = false; // an answer went out before the request was read to its end
    std::string scratch_;       // rendered message heads, reused for every message on this connection
    std::optional<typename reader::parser_type> parser_;
    request_exchange ex_; // the current request's
};

} // namespace

} // namespace idemgate::gateway::detail
