// SPDX-License-Identifier: Apache-2.0
#pragma once
// One HTTP/2 connection's protocol state: an nghttp2 server session fed with the bytes the
// connection reads and drained of the bytes it writes (h2_connection.hpp does the I/O). Each
// request stream becomes a request_type and goes through the same idempotency filter as an
// HTTP/1.1 request, in its own coroutine on the connection's thread; its answer is submitted back
// here. The session outlives the connection while a stream's request is still running (a
// cancelled stream whose request reached the upstream completes and records), so it is shared.
//
// Protections (each counted in idemgate_http2_limits_total and logged once per connection):
// a budget of stream resets (Rapid Reset) and of control frames (SETTINGS, PING, PRIORITY,
// WINDOW_UPDATE floods), both ending the connection with GOAWAY ENHANCE_YOUR_CALM; header lists
// bounded by http2.max_header_list_size and limits.max_header_bytes (431); CONTINUATION frames and
// pending acknowledgements bounded by nghttp2's own limits; stalled answers (a zero window)
// reset after timeouts.client_write.
#include "core/problem.hpp"
#include "core/request_exchange.hpp"
#include "observability/request_trace.hpp"
#include "state/worker.hpp"

#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <idemgate/gateway/request_id.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>

struct nghttp2_session;
struct nghttp2_session_callbacks;

namespace idemgate::gateway::detail {

class h2_stream_sink;

enum class h2_limit { stream_resets, control_frames, header_list, protocol, stall };

// One request stream, from its HEADERS to its close.
struct h2_stream {
    using clock = std::chrono::steady_clock;
    enum class phase { receiving, running, responding };

    std::int32_t id = 0;
    phase state = phase::receiving;
    request_type req;
    std::string authority;
    std::string cookies;
    std::size_t header_bytes = 0;
    bool headers_done = false;
    bool oversized_header = false;
    bool trailers = false;
    bool closed = false;   // nghttp2 closed it (answered, reset, or the connection ended)
    clock::time_point due; // of the phase it is in (header, body, or answer sent)
    // The request's context (its configuration, IDs, trace, the answer the filter returned or a
    // refusal, started when its HEADERS began), ended by finish_exchange.
    request_exchange ex;
    // The answer's body being sent.
    std::string_view body;
    std::size_t sent = 0;
    bool head = false;
    // While the filter runs: where an answer too large to record goes (h2_sink.hpp).
    h2_stream_sink* sink = nullptr;
};

// Registers the receiving side's callbacks (h2_frames.cpp).
void install_h2_callbacks(nghttp2_session_callbacks* cbs);

class h2_session : public std::enable_shared_from_this<h2_session> {
public:
    using clock = std::chrono::steady_clock;

    h2_session(gateway_context& ctx, worker& w, client_info client);
    ~h2_session();
    h2_session(const h2_session&) = delete;
    h2_session& operator=(const h2_session&) = delete;

    // Sends the server's SETTINGS under the live generation's http2 settings; false if nghttp2
    // could not start.
    bool start();
    // Feeds bytes read from the client; false when the connection must end (after what is
    // pending was written: a GOAWAY, say).
    bool receive(const unsigned char* data, std::size_t size);
    // Appends the bytes to write, up to about `max`; false on a fatal session error.
    bool collect(std::string& out, std::size_t max);
    // Nothing more to read or write: the connection may close.
    bool finished() const;
    // Once a tick: per-stream deadlines, the idle timeout, drain. Wakes the writer if it queued
    // something.
    void sweep(clock::time_point now);
    // The connection's writer, woken when a stream submits an answer; cleared by detach().
    void on_output(std::function<void()> wake) { wake_ = std::move(wake); }
    // The connection is gone: no more output; running streams finish and record without answer.
    void detach();
    // What the limits bound: open streams, and requests still in the filter (reset ones too).
    std::size_t open_streams() const { return streams_.size(); }
    std::size_t running_requests() const { return running_; }

private:
    friend struct h2_callbacks;
    friend struct h2_answers;
    friend class h2_stream_sink;

    h2_stream* stream(std::int32_t id);
    void dispatch(h2_stream& s);
    boost::asio::awaitable<void> run_stream(std::shared_ptr<h2_stream> s);
    void submit(h2_stream& s);
    // Submits the head of an answer passed on as it arrives; its DATA come from s.sink. False
    // if nghttp2 refused it.
    bool submit_streamed(h2_stream& s, const handled& h);
    void reject(h2_stream& s, const problem& p, std::string_view detail);
    void finish(h2_stream& s, std::uint32_t error_code);
    void hit(h2_limit limit, std::string_view detail);
    // hit(), then GOAWAY ENHANCE_YOUR_CALM.
    void calm(h2_limit limit, std::string_view detail);
    void control_frame(clock::time_point now);
    double reset_burst() const;
    bool take(double& tokens, clock::time_point& last, double rate, double burst);
    void wake();

    gateway_context& ctx_;
    worker& worker_;
    client_info client_;
    std::shared_ptr<request_env> env_; // the generation the connection began under
    nghttp2_session* session_ = nullptr;
    std::map<std::int32_t, std::shared_ptr<h2_stream>> streams_;
    std::function<void()> wake_;
    std::size_t running_ = 0; // streams whose request is in the filter, reset ones included
    std::size_t max_running_ = 0;
    std::size_t header_limit_ = 0;
    unsigned limits_hit_ = 0; // one bit per h2_limit: logged and counted once per connection
    bool detached_ = false;
    bool draining_ = false;
    clock::time_point idle_since_;
    double reset_tokens_ = 0, control_tokens_ = 0;
    clock::time_point reset_refill_, control_refill_;
};

} // namespace idemgate::gateway::detail
