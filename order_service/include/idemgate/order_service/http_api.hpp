// SPDX-License-Identifier: Apache-2.0
#pragma once
// The order service's HTTP API: a blocking request -> response function (runs on the database
// thread pool) and the Beast/Asio coroutine server that carries requests to it.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <idemgate/order_service/order_store.hpp>
#include <mutex>
#include <string>
#include <unordered_set>

namespace idemgate::order_service {

using http_request = boost::beast::http::request<boost::beast::http::string_body>;
using http_response = boost::beast::http::response<boost::beast::http::string_body>;

// The request header that makes a POST fail once with 500 (test and demo hook): the first
// request carrying a given token is counted as an execution and answered 500 without any
// effect; later requests with the same token run normally. It lets a test show that the
// gateway does not cache a server error (the seed's TestServerErrorIsNotCached).
inline constexpr const char* fail_once_header = "X-Fail-Once";

// The request header that makes a payment wait this many milliseconds (0-10000) before it is
// applied, as a slow payment provider would (test and demo hook): a retry sent meanwhile finds
// the first attempt still running.
inline constexpr const char* provider_delay_header = "X-Provider-Delay-Ms";

// The gateway's attempt_header as the demo configures it: which execution of its
// Idempotency-Key a request is (1, then 2 after the gateway released the key, ...). Every POST
// that carries it is logged ("attempt"), a re-execution at warn level, so the log shows when a
// key ran twice and why.
inline constexpr const char* attempt_header = "Idempotency-Attempt";

// Routes and handles one request. Blocking (SQLite); never throws.
//   POST /api/v1/orders                 {items:[{sku,qty,price_cents}], total_cents?} -> 201
//   GET  /api/v1/orders/{id}                                                          -> 200 | 404
//   POST /api/v1/orders/{id}/payments   {amount_cents, provider_ref}  -> the domain guard
//   POST /api/v1/orders/{id}/cancel                                   -> 200 | 409
//   POST /webhooks/payments             {order_id, amount_cents, provider_ref} -> the same guard
//   GET  /stats                         {"executions":{...},"payments":N,"orders":N,"inbox":N}
//   GET  /healthz
// Errors are RFC 9457 application/problem+json.
class api {
public:
    explicit api(order_store& store) : store_(store) {}
    http_response handle(const http_request& req);

private:
    http_response route(const http_request& req);
    http_response create_order(const http_request& req);
    http_response get_order(const http_request& req, std::string_view id);
    http_response pay(const http_request& req, std::string_view order_id, bool webhook);
    http_response cancel(const http_request& req, std::string_view order_id);
    http_response stats(const http_request& req);
    // True the first time `token` is seen (bounded memory).
    bool first_failure(std::string_view token);

    order_store& store_;
    std::mutex fail_mutex_;
    std::unordered_set<std::string> failed_tokens_;
};

// Limits of the HTTP server; every read and write has a deadline.
struct server_limits {
    std::size_t max_body = 1024 * 1024;
    std::size_t max_header = 16 * 1024;
    std::chrono::milliseconds read_timeout{30000};
    std::chrono::milliseconds write_timeout{30000};
};

// Accepts connections on `endpoint`; each connection is one coroutine on the io_context. The
// handler runs on `db_pool` (see http_server.cpp for why), never on an io thread.
class http_server {
public:
    http_server(boost::asio::io_context& ioc, boost::asio::thread_pool& db_pool, api& handler,
                const boost::asio::ip::tcp::endpoint& endpoint, server_limits limits = {});
    boost::asio::ip::tcp::endpoint local_endpoint() const { return acceptor_.local_endpoint(); }
    void start();
    // Stops accepting; open connections end at their next deadline or when the io_context stops.
    void stop();

private:
    boost::asio::awaitable<void> accept_loop();
    boost::asio::awaitable<void> serve(boost::asio::ip::tcp::socket socket);

    boost::asio::io_context& ioc_;
    boost::asio::thread_pool& db_pool_;
    api& handler_;
    boost::asio::ip::tcp::acceptor acceptor_;
    server_limits limits_;
};

// Builds an RFC 9457 problem response.
http_response problem(unsigned status, std::string_view type, std::string_view title, std::string_view detail,
                      unsigned version = 11);

} // namespace idemgate::order_service
