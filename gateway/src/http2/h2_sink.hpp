// SPDX-License-Identifier: Apache-2.0
#pragma once
// An answer too large to record, passed on over its HTTP/2 stream as it arrives
// (idempotency/big_answer.hpp): a HEADERS frame, then DATA frames fed from the upstream as the
// client's flow-control window lets them go, the last with END_STREAM. Each write waits until
// nghttp2 has taken its bytes, at most timeouts.client_write; a cut answer resets the stream.
#include "forward/big_answer.hpp"
#include "http2/h2_session.hpp"

#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <string>
#include <sys/types.h>

namespace idemgate::gateway::detail {

class h2_stream_sink final : public answer_sink {
public:
    // Lives in the stream's coroutine while the filter runs; registers itself as s.sink.
    h2_stream_sink(h2_session& session, h2_stream& s);
    // An answer whose head went out and whose body did not end is reset: never taken for whole.
    ~h2_stream_sink() override;
    h2_stream_sink(const h2_stream_sink&) = delete;
    h2_stream_sink& operator=(const h2_stream_sink&) = delete;

    boost::asio::awaitable<boost::system::error_code> write_head(handled& h) override;
    boost::asio::awaitable<boost::system::error_code>
    write(const std::array<boost::asio::const_buffer, 3>& parts) override;
    boost::asio::awaitable<boost::system::error_code>
    write_last(const std::array<boost::asio::const_buffer, 3>& parts) override;
    // RST_STREAM(INTERNAL_ERROR).
    void reset() noexcept override;
    bool frames_body() const noexcept override { return true; }

    // nghttp2's read callback for the stream: up to `length` of the bytes pending (the last ones
    // with NGHTTP2_DATA_FLAG_EOF), or NGHTTP2_ERR_DEFERRED while none are.
    ssize_t take(std::uint8_t* buf, std::size_t length, std::uint32_t* flags);
    // The stream closed or the connection went away: a waiting write returns.
    void gone() noexcept;

private:
    boost::asio::awaitable<boost::system::error_code>
    send(const std::array<boost::asio::const_buffer, 3>& parts, bool last);
    void end_stream(std::uint32_t error_code) noexcept;

    h2_session& session_;
    h2_stream& s_;
    boost::asio::steady_timer wait_;
    std::string pending_;
    std::size_t taken_ = 0;
    bool last_ = false;  // pending_ ends the body
    bool ended_ = false; // nghttp2 took the end of the body
    bool head_sent_ = false;
    bool deferred_ = false; // nghttp2 waits for resume_data
    bool gone_ = false;
};

} // namespace idemgate::gateway::detail
