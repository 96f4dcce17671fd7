// SPDX-License-Identifier: Apache-2.0
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <charconv>
#include <idemgate/loadtest/gateway_metrics.hpp>
#include <idemgate/loadtest/http_client.hpp>

namespace idemgate::loadtest {

namespace http = beast::http;

double gateway_counters::outcome(std::string_view name) const
{
    auto it = by_outcome.find(name);
    return it == by_outcome.end() ? 0 : it->second;
}

double gateway_counters::total() const
{
    double sum = 0;
    for (const auto& [name, value] : by_outcome)
        sum += value;
    return sum;
}

std::optional<gateway_counters> parse_gateway_metrics(std::string_view text)
{
    constexpr std::string_view series = "idemgate_requests_total{";
    constexpr std::string_view label = "outcome=\"";
    gateway_counters counters;
    bool found = false;
    while (!text.empty()) {
        auto eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text.remove_prefix(eol == std::string_view::npos ? text.size() : eol + 1);
        if (line.substr(0, series.size()) != series)
            continue;
        auto close = line.find('}');
        auto at = line.find(label);
        if (close == std::string_view::npos || at == std::string_view::npos || at > close)
            continue;
        std::string_view name = line.substr(at + label.size());
        name = name.substr(0, name.find('"'));
        std::string_view number = line.substr(close + 1);
        while (!number.empty() && number.front() == ' ')
            number.remove_prefix(1);
        number = number.substr(0, number.find(' ')); // a timestamp may follow
        double value = 0;
        auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
        if (ec != std::errc{})
            continue;
        counters.by_outcome[std::string(name)] += value;
        found = true;
    }
    if (!found)
        return std::nullopt;
    return counters;
}

namespace {

asio::awaitable<void> fetch_all(const std::vector<target_url>& urls, std::chrono::nanoseconds timeout,
                                std::optional<gateway_counters>& sum, std::string& error)
{
    auto executor = co_await asio::this_coro::executor;
    asio::ip::tcp::resolver resolver(executor);
    gateway_counters total;
    for (const auto& url : urls) {
        // Name resolution has no deadline of its own in Asio; the whole scrape runs under
        // io_context::run_for below.
        auto [rec, endpoints] =
            co_await resolver.async_resolve(url.host, url.port, asio::as_tuple(asio::use_awaitable));
        if (rec) {
            error = url.text + ": cannot resolve " + url.host + ": " + rec.message();
            co_return;
        }
        http_client_connection conn(executor, endpoints, timeout);
        std::string request = "GET " + url.target + " HTTP/1.1\r\nHost: " + url.host_header +
                              "\r\nUser-Agent: idemgate-loadtest\r\nConnection: close\r\n\r\n";
        http::response<http::string_body> res;
        auto err = co_await conn.exchange(request, res);
        if (err) {
            error = url.text + ": " + err.ec.message();
            co_return;
        }
        if (res.result_int() != 200) {
            error = url.text + ": status " + std::to_string(res.result_int());
            co_return;
        }
        auto counters = parse_gateway_metrics(res.body());
        if (!counters) {
            error = url.text + ": no idemgate_requests_total samples (is it the gateway's admin /metrics?)";
            co_return;
        }
        for (const auto& [name, value] : counters->by_outcome)
            total.by_outcome[name] += value;
    }
    sum = std::move(total);
}

} // namespace

std::optional<gateway_counters> scrape_gateway_metrics(const std::vector<target_url>& urls,
                                                       std::chrono::nanoseconds timeout, std::string& error)
{
    std::optional<gateway_counters> sum; // before the io_context: its destructor may end the coroutine
    asio::io_context ioc(1);
    asio::co_spawn(ioc, fetch_all(urls, timeout, sum, error), [](std::exception_ptr e) {
        if (e)
            std::rethrow_exception(e);
    });
    ioc.run_for(timeout * static_cast<long>(urls.size() + 1));
    if (!sum && error.empty())
        error = "reading the metrics did not finish in time";
    return sum;
}

} // namespace idemgate::loadtest
