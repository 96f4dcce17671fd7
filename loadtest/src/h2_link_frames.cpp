// SPDX-License-Identifier: Apache-2.0
// The nghttp2 side of an HTTP/2 link: the session and its callbacks, which fill the waiting
// lanes' answers and say, in words, why a stream ended without one.
#include "h2_link.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <nghttp2/nghttp2.h>

namespace idemgate::loadtest::detail {

namespace {

constexpr std::size_t frame_header_size = 9;
// Windows large enough that answers are never held back for a WINDOW_UPDATE round trip.
constexpr std::int32_t stream_window = 16 * 1024 * 1024;
constexpr std::int32_t connection_window = 256 * 1024 * 1024;

std::string code_name(std::uint32_t code)
{
    return nghttp2_http2_strerror(code);
}

// Up to 200 bytes of a peer's text, control characters replaced.
std::string printable(const std::uint8_t* data, std::size_t size)
{
    std::string out(reinterpret_cast<const char*>(data), std::min<std::size_t>(size, 200));
    for (auto& c : out)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f)
            c = '?';
    return out;
}

} // namespace

// nghttp2's callbacks, with the link as their user data.
struct h2_link_callbacks {
    static h2_link& of(void* user) { return *static_cast<h2_link*>(user); }
    static h2_pending* pending(h2_link& l, std::int32_t id)
    {
        auto it = l.pending_.find(id);
        return it == l.pending_.end() ? nullptr : it->second;
    }

    static ssize_t read_body(nghttp2_session*, std::int32_t id, std::uint8_t* buf, std::size_t length,
                             std::uint32_t* flags, nghttp2_data_source*, void* user)
    {
        auto* p = pending(of(user), id);
        if (!p)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; // given up: the stream is reset
        const auto& body = p->req->body;
        std::size_t n = std::min(length, body.size() - p->body_sent);
        std::memcpy(buf, body.data() + p->body_sent, n);
        p->body_sent += n;
        if (p->body_sent == body.size())
            *flags |= NGHTTP2_DATA_FLAG_EOF;
        return static_cast<ssize_t>(n);
    }

    static int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name,
                         std::size_t namelen, const std::uint8_t* value, std::size_t valuelen, std::uint8_t,
                         void* user)
    {
        if (frame->hd.type != NGHTTP2_HEADERS)
            return 0;
        auto* p = pending(of(user), frame->hd.stream_id);
        if (!p || p->final_head)
            return 0; // trailer fields are not compared, as over HTTP/1.1
        std::string_view n(reinterpret_cast<const char*>(name), namelen);
        std::string_view v(reinterpret_cast<const char*>(value), valuelen);
        if (n == ":status") {
            // nghttp2 has checked it is three digits.
            unsigned status =
                v.size() == 3 ? static_cast<unsigned>((v[0] - '0') * 100 + (v[1] - '0') * 10 + (v[2] - '0'))
                              : 0;
            p->interim = status < 200; // 103 Early Hints: the final answer follows
            if (!p->interim) {
                p->res->result(status);
                p->has_status = true;
            }
            return 0;
        }
        if (p->interim || (!n.empty() && n.front() == ':'))
            return 0;
        p->res->insert(n, v);
        return 0;
    }

    static int on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user)
    {
        auto& l = of(user);
        switch (frame->hd.type) {
        case NGHTTP2_HEADERS:
        case NGHTTP2_DATA:
            if (auto* p = pending(l, frame->hd.stream_id)) {
                if (p->bytes)
                    p->bytes->received += frame->hd.length + frame_header_size;
                if (frame->hd.type == NGHTTP2_HEADERS && p->has_status)
                    p->final_head = true;
            }
            break;
        case NGHTTP2_RST_STREAM:
            if (auto* p = pending(l, frame->hd.stream_id)) {
                p->reset_by_server = true;
                p->reset_code = frame->rst_stream.error_code;
            }
            break;
        case NGHTTP2_GOAWAY: {
            const auto& g = frame->goaway;
            l.goaway_ = true;
            l.goaway_text_ = "the server sent GOAWAY (" + code_name(g.error_code) + ", last stream " +
                             std::to_string(g.last_stream_id);
            if (g.opaque_data_len)
                l.goaway_text_ += ", \"" + printable(g.opaque_data, g.opaque_data_len) + "\"";
            l.goaway_text_ += ")";
            l.wake();
            break;
        }
        default: break;
        }
        return 0;
    }

    static int on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user)
    {
        if (frame->hd.type == NGHTTP2_GOAWAY) {
            // nghttp2 ends the connection when the server broke the protocol; its GOAWAY carries
            // the code and, as debug data, its reason.
            auto& l = of(user);
            const auto& g = frame->goaway;
            l.sent_goaway_ = code_name(g.error_code);
            if (g.opaque_data_len)
                l.sent_goaway_ += ": " + printable(g.opaque_data, g.opaque_data_len);
            return 0;
        }
        if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA)
            return 0;
        if (auto* p = pending(of(user), frame->hd.stream_id); p && p->bytes)
            p->bytes->sent += frame->hd.length + frame_header_size;
        return 0;
    }

    static int on_data_chunk(nghttp2_session* session, std::uint8_t, std::int32_t id,
                             const std::uint8_t* data, std::size_t len, void* user)
    {
        auto* p = pending(of(user), id);
        if (!p || p->too_large)
            return 0;
        auto& body = p->res->body();
        if (body.size() + len > http_client_connection::body_limit) {
            p->too_large = true;
            nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
            return 0;
        }
        body.append(reinterpret_cast<const char*>(data), len);
        return 0;
    }

    static int on_invalid_frame(nghttp2_session*, const nghttp2_frame* frame, int lib_error, void* user)
    {
        if (auto* p = pending(of(user), frame->hd.stream_id); p && !p->invalid)
            p->invalid = lib_error;
        return 0;
    }

    static int on_error(nghttp2_session*, int, const char* msg, std::size_t len, void* user)
    {
        auto& l = of(user);
        if (l.session_error_.empty())
            l.session_error_.assign(msg, len);
        return 0;
    }

    static int on_stream_close(nghttp2_session*, std::int32_t id, std::uint32_t error_code, void* user)
    {
        of(user).finish_stream(id, error_code);
        return 0;
    }
};

bool h2_link::start_session(std::string& detail)
{
    nghttp2_session_callbacks* cbs = nullptr;
    if (nghttp2_session_callbacks_new(&cbs) != 0) {
        detail = "nghttp2: out of memory";
        return false;
    }
    nghttp2_session_callbacks_set_on_header_callback(cbs, &h2_link_callbacks::on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, &h2_link_callbacks::on_frame_recv);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, &h2_link_callbacks::on_frame_send);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, &h2_link_callbacks::on_data_chunk);
    nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cbs, &h2_link_callbacks::on_invalid_frame);
    nghttp2_session_callbacks_set_error_callback2(cbs, &h2_link_callbacks::on_error);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, &h2_link_callbacks::on_stream_close);
    int rv = nghttp2_session_client_new(&session_, cbs, this);
    nghttp2_session_callbacks_del(cbs);
    if (rv != 0) {
        detail = std::string("nghttp2: ") + nghttp2_strerror(rv);
        return false;
    }
    std::array<nghttp2_settings_entry, 2> settings{{
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(stream_window)},
    }};
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    nghttp2_session_set_local_window_size(session_, NGHTTP2_FLAG_NONE, 0, connection_window);
    return true;
}

std::int32_t h2_link::submit(h2_pending& p)
{
    const auto& req = *p.req;
    nva_.resize(req.names.size());
    for (std::size_t i = 0; i < req.names.size(); ++i)
        nva_[i] = nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(req.names[i].data())),
                             reinterpret_cast<std::uint8_t*>(const_cast<char*>(req.values[i].data())),
                             req.names[i].size(), req.values[i].size(), NGHTTP2_NV_FLAG_NONE};
    nghttp2_data_provider body{};
    body.read_callback = &h2_link_callbacks::read_body;
    // A request without a body ends with its HEADERS frame.
    auto id = nghttp2_submit_request(session_, nullptr, nva_.data(), nva_.size(),
                                     req.body.empty() ? nullptr : &body, nullptr);
    if (id < 0) {
        exhausted_ = true;
        return id;
    }
    pending_.emplace(id, &p);
    wake();
    return id;
}

void h2_link::forget(std::int32_t id)
{
    if (pending_.erase(id) && !closed_) {
        nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, id, NGHTTP2_CANCEL);
        wake();
    }
}

void h2_link::finish_stream(std::int32_t id, std::uint32_t error_code)
{
    auto it = pending_.find(id);
    if (it == pending_.end()) {
        wake(); // a retired link may now be done
        return;
    }
    h2_pending& p = *it->second;
    pending_.erase(it);
    std::string stream = "stream " + std::to_string(id);
    auto failed = [&](h2_error e, std::string why) {
        p.result = exchange_error{e, exchange_stage::read};
        if (p.detail)
            *p.detail = std::move(why);
    };
    if (p.too_large) {
        p.result = exchange_error{beast::http::error::body_limit, exchange_stage::read};
        if (p.detail)
            *p.detail = "the answer on " + stream + " is larger than 64 MiB";
    } else if (p.reset_by_server) {
        failed(h2_error::stream_reset,
               "the server reset " + stream + " (RST_STREAM " + code_name(p.reset_code) + ")");
    } else if (goaway_ && error_code == NGHTTP2_REFUSED_STREAM) {
        failed(h2_error::goaway, goaway_text_ + ": " + stream + " was not answered");
        p.refused = true;
    } else if (p.invalid) {
        failed(h2_error::protocol, "the server's answer on " + stream + " broke HTTP/2 (" +
                                       nghttp2_strerror(p.invalid) + "); the stream was reset");
    } else if (error_code != NGHTTP2_NO_ERROR) {
        failed(h2_error::stream_reset,
               stream + " closed with " + code_name(error_code) +
                   (session_error_.empty() ? std::string() : " (" + session_error_ + ")"));
    } else if (!p.final_head) {
        failed(h2_error::closed, "the server ended " + stream + " without a final answer");
    } else {
        p.result = exchange_error{};
    }
    p.done = true;
    p.waiter->cancel();
    wake();
}

} // namespace idemgate::loadtest::detail
