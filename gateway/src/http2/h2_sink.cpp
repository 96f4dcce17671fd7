// SPDX-License-Identifier: Apache-2.0
#include "http2/h2_sink.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <cstring>
#include <nghttp2/nghttp2.h>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using boost::system::error_code;

h2_stream_sink::h2_stream_sink(h2_session& session, h2_stream& s)
    : session_(session), s_(s), wait_(session.worker_.ioc)
{
    s_.sink = this;
}

h2_stream_sink::~h2_stream_sink()
{
    s_.sink = nullptr;
    if (head_sent_ && !ended_)
        end_stream(NGHTTP2_CANCEL);
}

asio::awaitable<error_code> h2_stream_sink::write_head(handled& h)
{
    if (gone_ || s_.closed || session_.detached_ || !session_.submit_streamed(s_, h))
        co_return asio::error::connection_reset;
    head_sent_ = true;
    co_return error_code{};
}

asio::awaitable<error_code> h2_stream_sink::write(const std::array<asio::const_buffer, 3>& parts)
{
    co_return co_await send(parts, false);
}

asio::awaitable<error_code> h2_stream_sink::write_last(const std::array<asio::const_buffer, 3>& parts)
{
    co_return co_await send(parts, true);
}

asio::awaitable<error_code> h2_stream_sink::send(const std::array<asio::const_buffer, 3>& parts, bool last)
{
    if (gone_ || s_.closed || session_.detached_ || !head_sent_)
        co_return asio::error::connection_reset;
    pending_.clear();
    taken_ = 0;
    for (const auto& p : parts)
        pending_.append(static_cast<const char*>(p.data()), p.size());
    if (pending_.empty() && !last)
        co_return error_code{};
    last_ = last;
    if (deferred_) {
        deferred_ = false;
        nghttp2_session_resume_data(session_.session_, s_.id);
    }
    session_.wake();
    const auto due = h2_session::clock::now() + s_.ex.env->cfg().timeouts.client_write;
    auto taken = [this] { return taken_ == pending_.size() && (!last_ || ended_); };
    while (!taken() && !gone_) {
        if (h2_session::clock::now() >= due) {
            session_.hit(h2_limit::stall, "an answer was not taken within timeouts.client_write");
            end_stream(NGHTTP2_CANCEL);
            co_return boost::beast::error::timeout;
        }
        wait_.expires_at(due);
        co_await wait_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (taken())
        co_return error_code{};
    co_return asio::error::connection_reset;
}

ssize_t h2_stream_sink::take(std::uint8_t* buf, std::size_t length, std::uint32_t* flags)
{
    auto n = std::min(length, pending_.size() - taken_);
    if (n == 0 && !last_) {
        deferred_ = true;
        return NGHTTP2_ERR_DEFERRED;
    }
    std::memcpy(buf, pending_.data() + taken_, n);
    taken_ += n;
    if (taken_ == pending_.size()) {
        if (last_) {
            *flags |= NGHTTP2_DATA_FLAG_EOF;
            ended_ = true;
        }
        wait_.cancel();
    }
    return static_cast<ssize_t>(n);
}

void h2_stream_sink::gone() noexcept
{
    gone_ = true;
    wait_.cancel();
}

void h2_stream_sink::reset() noexcept
{
    end_stream(NGHTTP2_INTERNAL_ERROR);
}

void h2_stream_sink::end_stream(std::uint32_t error_code) noexcept
{
    if (!gone_ && !s_.closed && !session_.detached_) {
        nghttp2_submit_rst_stream(session_.session_, NGHTTP2_FLAG_NONE, s_.id, error_code);
        session_.wake();
    }
    gone_ = true;
    wait_.cancel();
}

} // namespace idemgate::gateway::detail
