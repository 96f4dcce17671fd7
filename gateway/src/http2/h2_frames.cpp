// SPDX-License-Identifier: Apache-2.0
// The receiving side of an HTTP/2 connection: nghttp2's callbacks, turning frames into request
// streams (RFC 9113 8.3 pseudo-header mapping) and counting the frames a flood is made of.
#include "http2/h2_session.hpp"
#include "http2/h2_sink.hpp"
#include "idempotency/classify.hpp"

#include <nghttp2/nghttp2.h>

namespace idemgate::gateway::detail {

namespace {

// Stream resets per second a connection may send after its burst (Rapid Reset opens and
// cancels thousands a second).
constexpr double reset_rate = 50;

} // namespace

// The nghttp2 callbacks, each forwarding to the session that registered them.
struct h2_callbacks {
    static h2_session& self(void* user) { return *static_cast<h2_session*>(user); }

    static int begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user)
    {
        auto& ses = self(user);
        if (frame->hd.type != NGHTTP2_HEADERS)
            return 0;
        if (frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
            if (auto* s = ses.stream(frame->hd.stream_id))
                s->trailers = true;
            return 0;
        }
        auto s = std::make_shared<h2_stream>();
        s->id = frame->hd.stream_id;
        s->ex.started = h2_stream::clock::now();
        s->ex.client = &ses.client_;
        s->ex.stream = static_cast<std::uint32_t>(s->id);
        // Each stream runs under the configuration live when it began (reload).
        s->ex.env = ses.worker_.current(ses.ctx_);
        s->due = s->ex.started + s->ex.env->cfg().timeouts.header_read;
        s->req.version(11);
        ses.streams_.emplace(s->id, std::move(s));
        ses.ctx_.stats.h2_streams.fetch_add(1, std::memory_order_relaxed);
        return 0;
    }

    static int header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                      std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                      void* user)
    {
        auto* s = self(user).stream(frame->hd.stream_id);
        if (!s || s->trailers || s->state != h2_stream::phase::receiving)
            return 0;
        std::string_view n(reinterpret_cast<const char*>(name), namelen);
        std::string_view v(reinterpret_cast<const char*>(value), valuelen);
        // Counted as the HTTP/1.1 header would be: "name: value\r\n".
        s->header_bytes += namelen + valuelen + 4;
        if (s->header_bytes > self(user).header_limit_)
            s->oversized_header = true;
        if (s->oversized_header)
            return 0;
        if (n == ":method")
            s->req.method_string(v);
        else if (n == ":path")
            s->req.target(v);
        else if (n == ":authority")
            s->authority.assign(v);
        else if (!n.empty() && n.front() == ':')
            return 0; // :scheme (checked by nghttp2), :protocol
        else if (n == "cookie")
            s->cookies.append(s->cookies.empty() ? "" : "; ").append(v); // RFC 9113 8.2.3
        else
            s->req.insert(n, v);
        return 0;
    }

    static int frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user)
    {
        auto& ses = self(user);
        auto now = h2_stream::clock::now();
        switch (frame->hd.type) {
        case NGHTTP2_HEADERS:
        case NGHTTP2_DATA: {
            auto* s = ses.stream(frame->hd.stream_id);
            if (frame->hd.type == NGHTTP2_DATA && frame->hd.length == 0 &&
                !(frame->hd.flags & NGHTTP2_FLAG_END_STREAM))
                ses.control_frame(now);
            if (!s || s->state != h2_stream::phase::receiving)
                return 0;
            if (frame->hd.type == NGHTTP2_HEADERS && (frame->hd.flags & NGHTTP2_FLAG_END_HEADERS)) {
                if (s->trailers) {
                    ses.reject(*s, problems::bad_framing, "trailer fields are not accepted");
                    return 0;
                }
                s->headers_done = true;
                // The route's body_read when a body follows (routed here: the filter runs only
                // once the body is whole).
                const auto& cfg = s->ex.env->cfg();
                s->due =
                    now + ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) ? cfg.timeouts.body_read
                                                                       : body_read_for(cfg, s->req.target()));
                if (s->oversized_header) {
                    // The HTTP/1.1 words: the same problem document whichever protocol.
                    ses.reject(*s, problems::header_too_large,
                               "the request header exceeds limits.max_header_bytes");
                    return 0;
                }
            }
            if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)
                ses.dispatch(*s);
            return 0;
        }
        case NGHTTP2_RST_STREAM:
            if (!ses.take(ses.reset_tokens_, ses.reset_refill_, reset_rate, ses.reset_burst()))
                ses.calm(h2_limit::stream_resets, "stream resets beyond the connection's budget");
            return 0;
        case NGHTTP2_SETTINGS:
        case NGHTTP2_PING:
            if (!(frame->hd.flags & NGHTTP2_FLAG_ACK))
                ses.control_frame(now);
            return 0;
        case NGHTTP2_PRIORITY:
        case NGHTTP2_WINDOW_UPDATE: ses.control_frame(now); return 0;
        default: return 0;
        }
    }

    static int data_chunk(nghttp2_session*, std::uint8_t, std::int32_t id, const std::uint8_t* data,
                          std::size_t len, void* user)
    {
        auto& ses = self(user);
        auto* s = ses.stream(id);
        if (!s || s->state != h2_stream::phase::receiving)
            return 0;
        if (s->req.body().size() + len > s->ex.env->cfg().limits.max_request_body) {
            ses.reject(*s, problems::body_too_large, "the request body exceeds limits.max_request_body");
            return 0;
        }
        s->req.body().append(reinterpret_cast<const char*>(data), len);
        return 0;
    }

    static int stream_close(nghttp2_session*, std::int32_t id, std::uint32_t error_code, void* user)
    {
        auto& ses = self(user);
        auto it = ses.streams_.find(id);
        if (it == ses.streams_.end())
            return 0;
        auto s = std::move(it->second);
        ses.streams_.erase(it);
        s->closed = true;
        if (s->sink)
            s->sink->gone(); // a reset mid-answer: the filter stops passing it on, and settles
        if (s->state == h2_stream::phase::responding)
            ses.finish(*s, error_code);
        // A running stream is finished by its coroutine, which still records the answer.
        if (ses.streams_.empty())
            ses.idle_since_ = h2_stream::clock::now();
        return 0;
    }
};

void install_h2_callbacks(nghttp2_session_callbacks* cbs)
{
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, &h2_callbacks::begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, &h2_callbacks::header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &h2_callbacks::frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &h2_callbacks::data_chunk);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &h2_callbacks::stream_close);
}

} // namespace idemgate::gateway::detail
