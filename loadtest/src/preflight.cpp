// SPDX-License-Identifier: Apache-2.0
#include "preflight.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <idemgate/loadtest/h2_client.hpp>
#include <idemgate/loadtest/http_client.hpp>
#include <idemgate/loadtest/runner.hpp>
#include <thread>

namespace idemgate::loadtest::detail {

namespace asio = boost::asio;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;

boost::asio::ip::tcp::resolver::results_type resolve(const target_url& url)
{
    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    boost::system::error_code ec;
    auto results = resolver.resolve(url.host, url.port, ec);
    if (ec)
        throw run_error("cannot resolve " + url.host + ": " + ec.message());
    return results;
}

void probe(const options& o, const tcp::resolver::results_type& endpoints, asio::ssl::context* tls)
{
    exchange_error result{asio::error::timed_out, exchange_stage::connect};
    std::string detail;
    asio::io_context ioc(1);
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
            auto executor = co_await asio::this_coro::executor;
            if (o.http2) {
                // Over TLS, the server must choose h2 by ALPN; h2c has nothing to agree on first.
                h2_client_connection conn(executor, endpoints, o.timeout, tls, o.url.host);
                result = co_await conn.connect(&detail);
                conn.close();
            } else {
                http_client_connection conn(executor, endpoints, o.timeout, tls, o.url.host);
                result = co_await conn.connect();
                conn.close();
            }
        },
        [](std::exception_ptr e) {
            if (e)
                std::rethrow_exception(e);
        });
    ioc.run_for(o.timeout + std::chrono::seconds(1));
    if (result)
        throw run_error("cannot connect to " + o.url.host_header + ": " +
                        (detail.empty() ? result.ec.message() : detail));
}

std::optional<gateway_counters> settled_metrics(const options& o, const gateway_counters& before,
                                                std::uint64_t answers, std::string& error)
{
    auto deadline = clock_type::now() + std::chrono::seconds(3);
    std::optional<gateway_counters> after;
    for (;;) {
        error.clear();
        after = scrape_gateway_metrics(o.metrics, o.timeout, error);
        if (!after)
            return after;
        if (after->total() - before.total() >= static_cast<double>(answers) || clock_type::now() >= deadline)
            return after;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
}

} // namespace idemgate::loadtest::detail
