#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/gateway/upstream_pool.hpp>
#include <idemgate/gateway/wire.hpp>
#include <iterator>
#include <optional>
#include <sys/socket.h>

namespace idemgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace {

bool is_idempotent(http::verb v)
{
    switch (v) {
    case http::verb::get:
    case http::verb::head:
    case http::verb::options:
    case http::verb::trace:
    case http::verb::put:
    case http::verb::delete_: return true;
    default: return false;
    }
}

// Beast 1.81 appends a chunked response's trailer fields to the header fields. Trailers are
// dropped: never recorded, never replayed, never sent to the client (the gateway re-frames the
// body with Content-Length, which has no trailer section) - nginx does the same by default.
void drop_trailer_fields(http::response<http::string_body>& res, std::size_t header_fields)
{
    auto it = res.begin();
    for (std::size_t i = 0; i < header_fields && it != res.end(); ++i)
        ++it;
    while (it != res.end())
        it = res.erase(it);
}

} // namespace

upstream_pool::upstream_pool(asio::any_io_executor ex, std::vector<tcp::endpoint> endpoints,
                             std::size_t max_idle, const config::config& cfg, metrics& m)
    : executor_(std::move(ex)), endpoints_(std::move(endpoints)), max_idle_(max_idle), config_(cfg),
      metrics_(m)
{
    idle_.reserve(max_idle_);
}

std::unique_ptr<beast::tcp_stream> upstream_pool::take_idle()
{
    while (!idle_.empty()) {
        std::unique_ptr<beast::tcp_stream> s = std::move(idle_.back());
        idle_.pop_back();
        // A peek without blocking: 0 means the upstream closed it while idle, data means it sent
        // something unasked; either way the connection is not safe to reuse.
        char c;
        auto n = ::recv(s->socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return s;
        }
        error_code ignored;
        s->socket().close(ignored);
    }
    return nullptr;
}

asio::awaitable<upstream_result> upstream_pool::exchange(const http::request<http::string_body>& req,
                                                         bool head_request, std::string& scratch)
{
    upstream_result result;
    // timeouts.upstream_response bounds the whole exchange (writing the request and reading the
    // answer), so that lock_ttl > upstream_connect + upstream_response keeps the lock alive to
    // the end (issue 8). Connecting has its own deadline and is not counted.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    for (int attempt = 0; attempt < 2; ++attempt) {
        // Streams live behind unique_ptr: moving a beast::tcp_stream allocates a new impl.
        std::unique_ptr<beast::tcp_stream> conn = attempt == 0 ? take_idle() : nullptr;
        bool reused = conn != nullptr;
        if (!reused)
            conn = std::make_unique<beast::tcp_stream>(executor_);
        beast::tcp_stream& stream = *conn;
        if (reused) {
            metrics_.upstream_connections_reused.fetch_add(1, std::memory_order_relaxed);
        } else {
            stream.expires_after(config_.timeouts.upstream_connect);
            auto [ec, ep] = co_await stream.async_connect(endpoints_, use_tuple);
            if (ec) {
                metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_connect);
                co_return result;
            }
            error_code ignored;
            stream.socket().set_option(tcp::no_delay(true), ignored);
            metrics_.upstream_connections_opened.fetch_add(1, std::memory_order_relaxed);
        }

        if (!deadline)
            deadline = std::chrono::steady_clock::now() + config_.timeouts.upstream_response;
        auto remaining = std::chrono::duration_cast<std::chrono::milliseconds>(
            *deadline - std::chrono::steady_clock::now());
        auto wec =
            co_await write_message(stream, req, scratch, std::max(remaining, std::chrono::milliseconds(1)));
        if (wec) {
            if (reused)
                continue;
            if (wec == beast::error::timeout) {
                metrics_.upstream_timeouts.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_timeout);
            } else {
                metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_connect);
            }
            co_return result;
        }

        result.sent = true;
        stream.expires_at(*deadline);
        beast::flat_buffer buffer;
        // Interim 1xx answers (103 Early Hints, a stray 100) are read past, never forwarded as
        // final (RFC 9110 15.2); the deadline covers them all.
        std::optional<http::response_parser<http::string_body>> parser_storage;
        error_code rec;
        std::size_t header_fields = 0;
        for (int interim = 0; interim < 8; ++interim) {
            auto& p = parser_storage.emplace();
            p.body_limit(config_.limits.max_response_body);
            p.header_limit(64 * 1024);
            if (head_request)
                p.skip(true);
            auto [header_ec, header_read] = co_await http::async_read_header(stream, buffer, p, use_tuple);
            rec = header_ec;
            unsigned status = p.get().result_int();
            if (!rec && status >= 200) {
                header_fields = static_cast<std::size_t>(std::distance(p.get().begin(), p.get().end()));
                if (!p.is_done()) {
                    auto [body_ec, body_read] = co_await http::async_read(stream, buffer, p, use_tuple);
                    rec = body_ec;
                }
            }
            if (rec || status >= 200)
                break;
            if (status == 101 || interim == 7) {
                // No Upgrade was forwarded, so a 101 (or an endless run of 1xx) is a protocol error.
                rec = http::error::bad_version;
                break;
            }
        }
        auto& parser = *parser_storage;
        if (rec) {
            // Only an idempotent request may be sent again once it was written (RFC 9110 9.2.2):
            // the upstream may have run a POST that died without an answer.
            bool nothing_received = !parser.got_some() && buffer.size() == 0;
            if (reused && nothing_received && is_idempotent(req.method()) &&
                (rec == http::error::end_of_stream || rec == asio::error::eof ||
                 rec == asio::error::connection_reset))
                continue;
            if (rec == beast::error::timeout) {
                metrics_.upstream_timeouts.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_timeout);
            } else if (rec == http::error::body_limit) {
                metrics_.upstream_bad_responses.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_too_large);
            } else {
                metrics_.upstream_bad_responses.fetch_add(1, std::memory_order_relaxed);
                result.ec = make_error_code(error::upstream_protocol);
            }
            co_return result;
        }
        result.response = parser.release();
        drop_trailer_fields(result.response, header_fields);
        if (result.response.keep_alive() && buffer.size() == 0 && idle_.size() < max_idle_) {
            stream.expires_never();
            idle_.push_back(std::move(conn));
        } else {
            error_code ignored;
            stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
            stream.socket().close(ignored);
        }
        co_return result;
    }
    // Both attempts failed on write: the upstream is not taking requests.
    metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
    result.ec = make_error_code(error::upstream_connect);
    co_return result;
}

} // namespace idemgate::gateway
