// SPDX-License-Identifier: Apache-2.0
#include "http2/h2_session.hpp"

#include "filter/idempotency_filter.hpp"
#include "http2/h2_sink.hpp"
#include "idempotency/classify.hpp"
#include "state/exchange_epilogue.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/describe/enum_to_string.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <nghttp2/nghttp2.h>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;

namespace {

static_assert(h2_limit_count == enum_count<h2_limit>, "a metric label per h2_limit");
// Control frames (SETTINGS, PING, PRIORITY, WINDOW_UPDATE, empty DATA) a connection may send: a
// burst, then a steady rate, well above what a client multiplexing real requests sends.
constexpr double control_burst = 2000, control_rate = 1000;

} // namespace

h2_session::h2_session(gateway_context& ctx, worker& w, client_info client)
    : ctx_(ctx), worker_(w), client_(std::move(client)), env_(w.current(ctx)), idle_since_(clock::now()),
      reset_refill_(idle_since_), control_refill_(idle_since_)
{
}

h2_session::~h2_session()
{
    nghttp2_session_del(session_);
}

bool h2_session::start()
{
    const auto& cfg = env_->cfg();
    const auto& h2 = cfg.http2;
    header_limit_ = std::min(h2.max_header_list_size, cfg.limits.max_header_bytes);
    max_running_ = 2 * static_cast<std::size_t>(h2.max_concurrent_streams);
    reset_tokens_ = reset_burst();
    control_tokens_ = control_burst;

    nghttp2_session_callbacks* cbs = nullptr;
    if (nghttp2_session_callbacks_new(&cbs) != 0)
        return false;
    install_h2_callbacks(cbs);
    nghttp2_option* opt = nullptr;
    if (nghttp2_option_new(&opt) != 0) {
        nghttp2_session_callbacks_del(cbs);
        return false;
    }
    nghttp2_option_set_no_closed_streams(opt, 1);
    nghttp2_option_set_max_outbound_ack(opt, 100);
    nghttp2_option_set_max_settings(opt, 16);
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
    int rv = nghttp2_session_server_new2(&session_, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0)
        return false;
    std::array<nghttp2_settings_entry, 6> settings{{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, h2.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(h2.initial_window_size)},
        {NGHTTP2_SETTINGS_MAX_FRAME_SIZE, static_cast<std::uint32_t>(h2.max_frame_size)},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, static_cast<std::uint32_t>(header_limit_)},
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    }};
    if (nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size()) != 0)
        return false;
    // The connection's window as large as a stream's, so one stream's body is not held back.
    if (h2.initial_window_size > 65535)
        nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0,
                                              static_cast<std::int32_t>(h2.initial_window_size));
    return true;
}

bool h2_session::receive(const unsigned char* data, std::size_t size)
{
    auto rv = nghttp2_session_mem_recv(session_, data, size);
    if (rv >= 0)
        return true;
    switch (rv) {
    case NGHTTP2_ERR_FLOODED:
        hit(h2_limit::control_frames, "acknowledgements pending beyond the limit (the client does not read)");
        break;
    case NGHTTP2_ERR_TOO_MANY_CONTINUATIONS:
        hit(h2_limit::header_list, "too many CONTINUATION frames");
        break;
    case NGHTTP2_ERR_BAD_CLIENT_MAGIC: break; // not HTTP/2: nothing to say
    default: hit(h2_limit::protocol, nghttp2_strerror(static_cast<int>(rv)));
    }
    nghttp2_session_terminate_session(session_,
                                      rv == NGHTTP2_ERR_FLOODED || rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS
                                          ? NGHTTP2_ENHANCE_YOUR_CALM
                                          : NGHTTP2_PROTOCOL_ERROR);
    return false;
}

bool h2_session::collect(std::string& out, std::size_t max)
{
    while (out.size() < max) {
        const std::uint8_t* data = nullptr;
        auto n = nghttp2_session_mem_send(session_, &data);
        if (n < 0)
            return false;
        if (n == 0)
            break;
        out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
    return true;
}

bool h2_session::finished() const
{
    return nghttp2_session_want_read(session_) == 0 && nghttp2_session_want_write(session_) == 0;
}

void h2_session::sweep(clock::time_point now)
{
    if (!draining_ && (ctx_.draining.load(std::memory_order_relaxed) ||
                       (streams_.empty() && now - idle_since_ >= env_->cfg().http2.idle_timeout))) {
        // Drain or idle: GOAWAY with the last stream taken; the open ones finish.
        draining_ = true;
        nghttp2_submit_goaway(session_, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(session_),
                              NGHTTP2_NO_ERROR, nullptr, 0);
    }
    for (auto& [id, s] : streams_) {
        if (now < s->due || s->state == h2_stream::phase::running)
            continue;
        if (s->state == h2_stream::phase::receiving && s->headers_done) {
            reject(*s, problems::request_timeout,
                   "the request body did not arrive within body_read (the route's, else timeouts.body_read)");
        } else {
            if (s->state == h2_stream::phase::responding)
                hit(h2_limit::stall, "an answer was not taken within timeouts.client_write");
            s->due = clock::time_point::max();
            nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        }
    }
    wake();
}

void h2_session::detach()
{
    detached_ = true;
    wake_ = nullptr;
    for (auto& [id, s] : streams_) {
        s->closed = true;
        if (s->sink)
            s->sink->gone();
        if (s->state == h2_stream::phase::responding)
            finish(*s, NGHTTP2_CANCEL);
    }
    streams_.clear();
}

h2_stream* h2_session::stream(std::int32_t id)
{
    auto it = streams_.find(id);
    return it == streams_.end() ? nullptr : it->second.get();
}

void h2_session::dispatch(h2_stream& s)
{
    if (running_ >= max_running_) {
        // Reset streams whose requests still run count here: a client cannot pile them up.
        hit(h2_limit::stream_resets, "too many requests still running on the connection");
        s.state = h2_stream::phase::running; // nothing more is read into it
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, s.id, NGHTTP2_REFUSED_STREAM);
        return;
    }
    const auto& cfg = s.ex.env->cfg();
    if (s.req.method() == http::verb::connect) {
        reject(s, problems::bad_request, "CONNECT is not served");
        return;
    }
    if (!s.cookies.empty())
        s.req.set(http::field::cookie, s.cookies);
    if (!s.authority.empty())
        s.req.set(http::field::host, s.authority); // RFC 9113 8.3.1
    s.ex.req = &s.req;
    begin_exchange(ctx_, s.ex);
    // The upstream sees the ID the client gets back (a missing or unusable one replaced).
    if (s.ex.ids.generated)
        s.req.set(cfg.request_id_header, s.ex.ids.request_id);
    s.state = h2_stream::phase::running;
    ++running_;
    ctx_.stats.requests_in_flight.fetch_add(1);
    asio::co_spawn(worker_.ioc, run_stream(streams_.at(s.id)), asio::detached);
}

asio::awaitable<void> h2_session::run_stream(std::shared_ptr<h2_stream> s)
{
    auto keep = shared_from_this();
    std::string scratch;
    h2_stream_sink sink(*this, *s);
    s->ex.scratch = &scratch;
    s->ex.sink = &sink;
    co_await handle_request(ctx_, worker_, s->ex);
    s->ex.scratch = nullptr;
    s->ex.sink = nullptr;
    --running_;
    if (s->ex.answer.written) {
        // Passed on as it arrived (too large to record): the sink ended the stream, or reset it.
        s->sent = s->ex.answer.body_bytes;
        finish(*s, s->ex.answer.write_error ? NGHTTP2_CANCEL : NGHTTP2_NO_ERROR);
        co_return;
    }
    if (s->closed || detached_) {
        // Reset by the client or the connection is gone: the request ran (and recorded) all
        // the same, as for an HTTP/1.1 client that went away.
        finish(*s, NGHTTP2_CANCEL);
        co_return;
    }
    submit(*s);
}

void h2_session::reject(h2_stream& s, const problem& p, std::string_view detail)
{
    const auto& cfg = s.ex.env->cfg();
    s.ex.answer.clear();
    s.ex.answer.response = make_problem(cfg.problems.type_base(), {p, detail}, 11, false);
    s.ex.answer.result = outcome::rejected;
    if (s.headers_done) {
        s.ex.answer.status_header = status_header_for(cfg, s.req);
        s.ex.answer.key_state = key_status::rejected;
    }
    if (s.ex.ids.request_id.empty() && !cfg.request_id_header.empty())
        new_request_id(s.ex.ids.request_id);
    s.ex.refused = detail;
    s.ex.req = s.headers_done ? &s.req : nullptr; // its method, for the route counters
    ctx_.stats.requests_in_flight.fetch_add(1);   // as a dispatched request: finish() counts it out
    submit(s);
}

void h2_session::finish(h2_stream& s, std::uint32_t error_code)
{
    ctx_.stats.requests_in_flight.fetch_sub(1);
    if (error_code != NGHTTP2_NO_ERROR)
        s.ex.write_error = asio::error::connection_reset;
    s.ex.bytes_out = s.sent;
    finish_exchange(ctx_, worker_, s.ex);
}

void h2_session::calm(h2_limit limit, std::string_view detail)
{
    hit(limit, detail);
    nghttp2_session_terminate_session(session_, NGHTTP2_ENHANCE_YOUR_CALM);
}

void h2_session::control_frame(clock::time_point)
{
    if (!take(control_tokens_, control_refill_, control_rate, control_burst))
        calm(h2_limit::control_frames, "control frames beyond the connection's budget");
}

double h2_session::reset_burst() const
{
    return std::max(200.0, 2.0 * env_->cfg().http2.max_concurrent_streams);
}

void h2_session::hit(h2_limit limit, std::string_view detail)
{
    auto bit = 1u << static_cast<unsigned>(limit);
    if (limits_hit_ & bit)
        return;
    limits_hit_ |= bit;
    ctx_.stats.h2_limits[static_cast<std::size_t>(limit)].fetch_add(1, std::memory_order_relaxed);
    log::warn(
        "http2: client connection ran into a limit",
        {{"limit", boost::describe::enum_to_string(limit, "")}, {"client", client_.ip}, {"detail", detail}});
}

bool h2_session::take(double& tokens, clock::time_point& last, double rate, double burst)
{
    auto now = clock::now();
    tokens = std::min(burst, tokens + std::chrono::duration<double>(now - last).count() * rate);
    last = now;
    if (tokens < 1)
        return false;
    tokens -= 1;
    return true;
}

void h2_session::wake()
{
    if (wake_)
        wake_();
}

} // namespace idemgate::gateway::detail
