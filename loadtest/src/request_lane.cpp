// SPDX-License-Identifier: Apache-2.0
#include "request_lane.hpp"

#include <boost/asio/steady_timer.hpp>
#include <idemgate/loadtest/h2_client.hpp>

namespace idemgate::loadtest::detail {

namespace {

std::string_view stage_name(exchange_stage stage)
{
    switch (stage) {
    case exchange_stage::connect: return "connecting";
    case exchange_stage::write: return "writing the request";
    case exchange_stage::read: return "reading the answer";
    case exchange_stage::none: break;
    }
    return "exchanging";
}

class http1_lane final : public request_lane {
public:
    http1_lane(asio::any_io_executor executor, const options& o,
               const asio::ip::tcp::resolver::results_type& endpoints, asio::ssl::context* tls)
        : conn_(std::move(executor), endpoints, o.timeout, tls, o.url.host)
    {
    }
    // Not a coroutine: the connection's own exchange is the awaitable.
    asio::awaitable<exchange_error> exchange(const request_template& target, std::string_view key,
                                             response& res, exchange_bytes& bytes) override
    {
        target.render(request_, key);
        return conn_.exchange(request_, res, target.head_request(), &bytes);
    }
    void close() noexcept override { conn_.close(); }

private:
    http_client_connection conn_;
    std::string request_;
};

class h2_lane final : public request_lane {
public:
    h2_lane(asio::any_io_executor executor, std::shared_ptr<h2_client_connection> conn)
        : conn_(std::move(conn)), waiter_(std::move(executor))
    {
    }
    asio::awaitable<exchange_error> exchange(const request_template& target, std::string_view key,
                                             response& res, exchange_bytes& bytes) override
    {
        target.render_fields(fields_, key);
        detail_.clear();
        return conn_->exchange(fields_, res, waiter_, &bytes, &detail_);
    }
    std::string failure(const exchange_error& err) const override
    {
        return detail_.empty() ? request_lane::failure(err) : detail_;
    }
    // The connection closes with its last lane.
    void close() noexcept override { conn_.reset(); }

private:
    std::shared_ptr<h2_client_connection> conn_;
    asio::steady_timer waiter_;
    request_fields fields_;
    std::string detail_;
};

} // namespace

std::string request_lane::failure(const exchange_error& err) const
{
    return std::string(stage_name(err.stage)) + ": " + err.ec.message();
}

std::vector<std::unique_ptr<request_lane>>
connection_lanes(asio::any_io_executor executor, const options& o,
                 const asio::ip::tcp::resolver::results_type& endpoints, asio::ssl::context* tls)
{
    std::vector<std::unique_ptr<request_lane>> lanes;
    if (!o.http2) {
        lanes.push_back(std::make_unique<http1_lane>(executor, o, endpoints, tls));
        return lanes;
    }
    auto conn = std::make_shared<h2_client_connection>(executor, endpoints, o.timeout, tls, o.url.host);
    for (unsigned s = 0; s < o.streams; ++s)
        lanes.push_back(std::make_unique<h2_lane>(executor, conn));
    return lanes;
}

} // namespace idemgate::loadtest::detail
