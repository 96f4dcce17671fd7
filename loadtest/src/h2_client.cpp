// SPDX-License-Identifier: Apache-2.0
#include "h2_link.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <idemgate/loadtest/h2_client.hpp>
#include <nghttp2/nghttp2.h>

namespace idemgate::loadtest {

namespace {

class h2_error_category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "idemgate-loadtest.h2"; }
    std::string message(int e) const override
    {
        switch (static_cast<h2_error>(e)) {
        case h2_error::goaway: return "the server sent GOAWAY";
        case h2_error::stream_reset: return "the stream was reset";
        case h2_error::protocol: return "HTTP/2 protocol error";
        case h2_error::no_alpn_h2: return "the server did not choose h2 by ALPN";
        case h2_error::closed: return "the connection ended before the answer";
        }
        return "HTTP/2 error";
    }
};

std::string timeout_text(std::chrono::nanoseconds timeout)
{
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) + " ms";
}

} // namespace

const boost::system::error_category& h2_category() noexcept
{
    static const h2_error_category category;
    return category;
}

boost::system::error_code make_error_code(h2_error e) noexcept
{
    return {static_cast<int>(e), h2_category()};
}

h2_client_connection::h2_client_connection(asio::any_io_executor executor,
                                           asio::ip::tcp::resolver::results_type endpoints,
                                           std::chrono::nanoseconds timeout, asio::ssl::context* tls,
                                           std::string server_name)
    : executor_(std::move(executor)), endpoints_(std::move(endpoints)), timeout_(timeout), tls_(tls),
      server_name_(std::move(server_name)), connected_(executor_)
{
}

h2_client_connection::~h2_client_connection()
{
    close();
}

void h2_client_connection::close() noexcept
{
    auto end = [](detail::h2_link& link) {
        link.fail(h2_error::closed, exchange_stage::read, "the load tester closed the connection");
    };
    if (link_)
        end(*link_);
    link_.reset();
    for (auto& retired : retired_)
        if (auto link = retired.lock())
            end(*link);
    retired_.clear();
}

void h2_client_connection::retire_link()
{
    if (!link_)
        return;
    link_->retire();
    std::erase_if(retired_, [](const auto& w) { return w.expired(); });
    retired_.push_back(link_);
    link_.reset();
}

asio::awaitable<exchange_error> h2_client_connection::connect(std::string* detail)
{
    for (;;) {
        if (link_ && link_->open_for_streams())
            co_return exchange_error{};
        if (connecting_) {
            // Another lane is connecting: its result is ours.
            auto seen = connects_;
            connected_.expires_at(asio::steady_timer::time_point::max());
            co_await connected_.async_wait(use_tuple);
            if (connects_ != seen && connect_result_) {
                if (detail)
                    *detail = connect_detail_;
                co_return connect_result_;
            }
            continue;
        }
        retire_link();
        connecting_ = true;
        auto link = std::make_shared<detail::h2_link>(executor_, timeout_, tls_, server_name_);
        std::string why;
        auto err = co_await link->connect(endpoints_, why);
        connecting_ = false;
        ++connects_;
        connect_result_ = err;
        connect_detail_ = why;
        connected_.cancel();
        if (err) {
            if (detail)
                *detail = std::move(why);
            co_return err;
        }
        link_ = std::move(link);
        co_return exchange_error{};
    }
}

asio::awaitable<exchange_error> h2_client_connection::exchange(const request_fields& req, response& res,
                                                               asio::steady_timer& waiter,
                                                               exchange_bytes* bytes, std::string* detail)
{
    for (int attempt = 0;; ++attempt) {
        if (!link_ || !link_->open_for_streams()) {
            auto err = co_await connect(detail);
            if (err)
                co_return err;
        }
        auto link = link_; // kept while this stream waits, even if another lane retires it
        res.base().clear();
        res.body().clear();
        res.version(20);
        detail::h2_pending p;
        p.req = &req;
        p.res = &res;
        p.bytes = bytes;
        p.waiter = &waiter;
        p.detail = detail;
        auto id = link->submit(p);
        if (id < 0) {
            // No stream IDs left, or the server's GOAWAY arrived: a new connection, once.
            if (attempt == 0 &&
                (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE || id == NGHTTP2_ERR_START_STREAM_NOT_ALLOWED)) {
                retire_link();
                continue;
            }
            if (detail)
                *detail = std::string("submitting the request: ") + nghttp2_strerror(id);
            co_return exchange_error{h2_error::protocol, exchange_stage::write};
        }
        waiter.expires_after(timeout_);
        co_await waiter.async_wait(use_tuple);
        // A stream the server's GOAWAY left unprocessed is sent again once on a new connection,
        // as HTTP/2 clients do (RFC 9113 8.7): a server that closes connections gracefully (a
        // drain, a connection age limit) loses no request.
        if (p.done && p.refused && attempt == 0) {
            if (link_ == link)
                retire_link();
            continue;
        }
        if (p.done)
            co_return p.result;
        link->forget(id);
        if (link->silent_for(timeout_)) {
            // Nothing at all for the whole timeout: the connection is dead; the next request
            // connects again, as over HTTP/1.1.
            link->fail(beast::error::timeout, exchange_stage::read,
                       "the server sent nothing for --timeout " + timeout_text(timeout_));
            if (link_ == link)
                link_.reset();
        }
        if (detail)
            *detail =
                "no answer on stream " + std::to_string(id) + " within --timeout " + timeout_text(timeout_);
        co_return exchange_error{beast::error::timeout, exchange_stage::read};
    }
}

} // namespace idemgate::loadtest
