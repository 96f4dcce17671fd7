#include "admin.hpp"

#include "listener.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/problem.hpp>
#include <idemgate/gateway/wire.hpp>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

admin::admin(gateway_context& ctx, asio::io_context& control, std::function<void(std::string&)> metrics_extra)
    : ctx_(ctx), control_(control), metrics_extra_(std::move(metrics_extra)), acceptor_(control)
{
}

void admin::bind(const tcp::endpoint& ep)
{
    open_listener(acceptor_, ep, false, "admin_listen");
    endpoint_ = acceptor_.local_endpoint();
}

void admin::start()
{
    asio::co_spawn(control_, accept_loop(), asio::detached);
    asio::co_spawn(control_, watch_store(), asio::detached);
}

void admin::stop()
{
    stopped_ = true;
    error_code ignored;
    acceptor_.close(ignored);
}

asio::awaitable<void> admin::accept_loop()
{
    for (;;) {
        auto [ec, socket] = co_await acceptor_.async_accept(use_tuple);
        if (ec)
            co_return;
        asio::co_spawn(control_, session(std::move(socket)), asio::detached);
    }
}

response_type admin::answer(const http::request<http::empty_body>& req)
{
    response_type res{http::status::ok, req.version()};
    auto path = req.target().substr(0, req.target().find('?'));
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    if (req.method() != http::verb::get && req.method() != http::verb::head) {
        res = make_problem(problems::bad_request, "the admin port answers GET only", req.version(), true);
        res.result(http::status::method_not_allowed);
        res.set(http::field::allow, "GET, HEAD");
    } else if (path == "/healthz") {
        res.body() = "ok\n";
    } else if (path == "/readyz") {
        bool ok = ctx_.ready();
        res.result(ok ? http::status::ok : http::status::service_unavailable);
        if (ok)
            res.body() = "ready\n";
        else if (ctx_.draining.load())
            res.body() = "draining\n";
        else
            res.body() = "store " + std::string(ctx_.backend->kind()) + " unavailable\n";
    } else if (path == "/metrics") {
        res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
        res.body() = ctx_.stats.render(ctx_.ready(), metrics_extra_);
    } else {
        res =
            make_problem(problems::no_route, "admin paths: /healthz, /readyz, /metrics", req.version(), true);
    }
    res.keep_alive(req.keep_alive());
    res.prepare_payload();
    return res;
}

asio::awaitable<void> admin::session(tcp::socket socket)
{
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    std::string scratch;
    for (;;) {
        http::request_parser<http::empty_body> parser;
        parser.header_limit(8 * 1024);
        stream.expires_after(std::chrono::seconds(10));
        auto [ec, n] = co_await http::async_read(stream, buffer, parser, use_tuple);
        if (ec)
            break;
        const auto& req = parser.get();
        auto res = answer(req);
        auto wec = co_await write_message(stream, res, scratch, std::chrono::milliseconds(10000),
                                          req.method() != http::verb::head);
        if (wec || !req.keep_alive())
            break;
    }
    error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
}

// Logs every change of the store's readiness (first connection, loss, recovery), so an
// operator sees "store unavailable" in the log and not only on /readyz.
asio::awaitable<void> admin::watch_store()
{
    asio::steady_timer timer(control_);
    bool was_ready = false;
    bool first = true;
    for (;;) {
        bool now_ready = ctx_.backend->ready();
        if (now_ready != was_ready || first) {
            if (now_ready)
                log::info("store ready", {{"store", ctx_.backend->kind()}});
            else if (!first)
                log::error("store unavailable: guarded requests follow store.on_failure",
                           {{"store", ctx_.backend->kind()}});
            was_ready = now_ready;
            first = false;
        }
        timer.expires_after(std::chrono::milliseconds(now_ready ? 250 : 20));
        auto [ec] = co_await timer.async_wait(use_tuple);
        if (ec || stopped_)
            co_return;
    }
}

} // namespace idemgate::gateway::detail
