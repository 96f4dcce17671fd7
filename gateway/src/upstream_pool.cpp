#include "tls.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/upstream_pool.hpp>
#include <idemgate/gateway/wire.hpp>
#include <iterator>
#include <openssl/ssl.h>
#include <optional>
#include <sys/socket.h>
#include <type_traits>

namespace idemgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

namespace detail {

struct upstream_tls_connection {
    upstream_tls_connection(const asio::any_io_executor& ex, ssl::context& ctx) : stream(ex, ctx) {}
    tls_stream stream;
};

void tls_connection_deleter::operator()(upstream_tls_connection* c) const noexcept
{
    delete c;
}

void tls_session_deleter::operator()(ssl_session_st* s) const noexcept
{
    SSL_SESSION_free(s);
}

} // namespace detail

namespace {

beast::tcp_stream& stream_of(std::unique_ptr<beast::tcp_stream>& c)
{
    return *c;
}

detail::tls_stream&
stream_of(std::unique_ptr<detail::upstream_tls_connection, detail::tls_connection_deleter>& c)
{
    return c->stream;
}

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

upstream_pool::upstream_pool(asio::any_io_executor ex, std::shared_ptr<upstream_fleet> fleet,
                             const config::config& cfg, metrics& m, std::shared_ptr<detail::upstream_tls> tls)
    : executor_(std::move(ex)), fleet_(std::move(fleet)), max_idle_(fleet_->config().max_idle_connections),
      config_(cfg), metrics_(m), tls_(std::move(tls))
{
}

upstream_pool::~upstream_pool() = default;

void upstream_pool::attach()
{
    update_addresses(fleet_->subscribe(weak_from_this(), executor_));
}

std::size_t upstream_pool::idle_count() const noexcept
{
    return idle_total_;
}

upstream_pool::pending_guard::pending_guard(std::shared_ptr<address_slot> slot) : slot_(std::move(slot))
{
    slot_->address->pending.fetch_add(1, std::memory_order_relaxed);
}

upstream_pool::pending_guard& upstream_pool::pending_guard::operator=(pending_guard&& other) noexcept
{
    if (this != &other) {
        if (slot_)
            slot_->address->pending.fetch_sub(1, std::memory_order_relaxed);
        slot_ = std::move(other.slot_);
    }
    return *this;
}

upstream_pool::pending_guard::~pending_guard()
{
    if (slot_)
        slot_->address->pending.fetch_sub(1, std::memory_order_relaxed);
}

void upstream_pool::update_addresses(std::shared_ptr<const address_set> set)
{
    std::vector<std::shared_ptr<address_slot>> next;
    next.reserve(set->size());
    for (const auto& address : *set) {
        std::shared_ptr<address_slot> kept;
        for (auto& slot : slots_)
            if (slot && slot->address == address)
                kept = std::move(slot);
        if (!kept) {
            kept = std::make_shared<address_slot>();
            kept->address = address;
        }
        next.push_back(std::move(kept));
    }
    // What is left went away: its idle connections close now, busy ones when their request ends.
    for (auto& slot : slots_) {
        if (!slot)
            continue;
        slot->retired = true;
        error_code ignored;
        for (auto& c : slot->idle)
            beast::get_lowest_layer(stream_of(c)).socket().close(ignored);
        for (auto& c : slot->idle_tls)
            beast::get_lowest_layer(stream_of(c)).socket().close(ignored);
        idle_total_ -= slot->idle.size() + slot->idle_tls.size();
        slot->idle.clear();
        slot->idle_tls.clear();
    }
    slots_ = std::move(next);
}

std::shared_ptr<upstream_pool::address_slot>
upstream_pool::pick(const std::vector<const address_slot*>& tried)
{
    auto n = slots_.size();
    if (n == 0)
        return nullptr;
    auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
                   .count();
    auto was_tried = [&](const address_slot* s) {
        return std::find(tried.begin(), tried.end(), s) != tried.end();
    };
    std::size_t start = cursor_ % n;
    cursor_ = start + 1;
    std::shared_ptr<address_slot> best;
    std::int64_t best_pending = 0;
    for (std::size_t k = 0; k < n; ++k) {
        auto& s = slots_[(start + k) % n];
        if (was_tried(s.get()) || !s->address->healthy(now))
            continue;
        if (fleet_->config().balance == config::balance_mode::round_robin) {
            cursor_ = start + k + 1;
            return s;
        }
        // least_pending: the fewest requests in flight over every thread; ties go round robin.
        auto pending = s->address->pending.load(std::memory_order_relaxed);
        if (!best || pending < best_pending) {
            best = s;
            best_pending = pending;
        }
    }
    if (best || !tried.empty())
        return best;
    // Every address is ejected: rather than failing every request, try the one ejected the
    // longest ago (Envoy's panic threshold at its extreme). A success ends its ejection.
    for (auto& s : slots_)
        if (!best || s->address->ejected_at.load(std::memory_order_relaxed) <
                         best->address->ejected_at.load(std::memory_order_relaxed))
            best = s;
    return best;
}

template<class Connection>
Connection upstream_pool::take_idle(address_slot& slot)
{
    auto& idle = [&slot]() -> auto&
    {
        if constexpr (std::is_same_v<Connection, plain_connection>)
            return slot.idle;
        else
            return slot.idle_tls;
    }
    ();
    while (!idle.empty()) {
        Connection c = std::move(idle.back());
        idle.pop_back();
        --idle_total_;
        auto& socket = beast::get_lowest_layer(stream_of(c)).socket();
        // A peek without blocking: 0 means the upstream closed it while idle, data means it sent
        // something unasked (over TLS, a close_notify); either way it is not safe to reuse.
        char byte;
        auto n = ::recv(socket.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return c;
        }
        error_code ignored;
        socket.close(ignored);
    }
    return nullptr;
}

template<class Connection>
void upstream_pool::put_idle(address_slot& slot, Connection conn)
{
    auto& tcp_layer = beast::get_lowest_layer(stream_of(conn));
    if (!slot.retired && idle_total_ < max_idle_) {
        tcp_layer.expires_never();
        if constexpr (std::is_same_v<Connection, plain_connection>)
            slot.idle.push_back(std::move(conn));
        else
            slot.idle_tls.push_back(std::move(conn));
        ++idle_total_;
        return;
    }
    error_code ignored;
    tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_layer.socket().close(ignored);
}

// Connects a new connection to one address, and over TLS shakes hands, all within `budget`
// (what is left of timeouts.upstream_connect). Any failure here happened before a byte of the
// request was sent: a connect failure.
template<class Connection>
asio::awaitable<error_code> upstream_pool::connect(Connection& conn, address_slot& slot,
                                                   std::chrono::steady_clock::duration budget)
{
    auto& tcp_layer = beast::get_lowest_layer(stream_of(conn));
    tcp_layer.expires_after(budget);
    auto [ec] = co_await tcp_layer.async_connect(slot.address->endpoint, use_tuple);
    if (ec) {
        metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
        co_return make_error_code(error::upstream_connect);
    }
    error_code ignored;
    tcp_layer.socket().set_option(tcp::no_delay(true), ignored);
    metrics_.upstream_connections_opened.fetch_add(1, std::memory_order_relaxed);
    if constexpr (!std::is_same_v<Connection, plain_connection>) {
        auto& stream = conn->stream;
        SSL* native = stream.native_handle();
        std::string why;
        error_code hec;
        const std::string& name = tls_->name.empty() ? slot.address->host : tls_->name;
        if (detail::prepare_client_ssl(native, *tls_, name, slot.session.get(), why)) {
            auto [handshake_ec] = co_await stream.async_handshake(ssl::stream_base::client, use_tuple);
            hec = handshake_ec;
            if (hec)
                why = detail::describe_client_failure(native, *tls_, name, hec);
        } else {
            hec = make_error_code(asio::error::invalid_argument);
        }
        if (hec) {
            metrics_.upstream_tls_failures.fetch_add(1, std::memory_order_relaxed);
            metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
            log::warn("upstream TLS handshake failed",
                      {{"upstream", fleet_->name()}, {"address", slot.address->label}, {"error", why}});
            slot.session.reset(); // the upstream may have changed its certificate or keys
            tcp_layer.socket().close(ignored);
            co_return make_error_code(error::upstream_connect);
        }
        metrics_.upstream_tls_handshakes[SSL_session_reused(native) == 1 ? 1 : 0].fetch_add(
            1, std::memory_order_relaxed);
    }
    co_return error_code{};
}

template<class Connection>
asio::awaitable<upstream_pool::acquired<Connection>> upstream_pool::acquire(bool allow_idle)
{
    acquired<Connection> out;
    // One timeouts.upstream_connect for every address tried, so that lock_ttl's bound (two
    // connects + the exchange, config::warnings) holds however many addresses there are.
    auto deadline = std::chrono::steady_clock::now() + config_.timeouts.upstream_connect;
    std::vector<const address_slot*> tried;
    out.ec = make_error_code(error::upstream_connect);
    for (;;) {
        auto slot = pick(tried);
        if (!slot)
            co_return out;
        tried.push_back(slot.get());
        pending_guard guard(slot);
        if (allow_idle) {
            out.conn = take_idle<Connection>(*slot);
            if (out.conn) {
                out.ec = {};
                out.reused = true;
                out.slot = std::move(guard);
                co_return out;
            }
        }
        auto budget = deadline - std::chrono::steady_clock::now();
        if (budget <= std::chrono::steady_clock::duration::zero())
            co_return out;
        if constexpr (std::is_same_v<Connection, plain_connection>)
            out.conn = std::make_unique<beast::tcp_stream>(executor_);
        else
            out.conn = Connection(new detail::upstream_tls_connection(executor_, tls_->ssl));
        auto cec = co_await connect(out.conn, *slot, budget);
        if (!cec) {
            fleet_->connect_succeeded(*slot->address);
            out.ec = {};
            out.slot = std::move(guard);
            co_return out;
        }
        out.conn = nullptr;
        fleet_->connect_failed(*slot->address);
    }
}

// Not a coroutine: it hands over the coroutine of the pool's stream type, so a plain exchange
// costs no extra frame.
asio::awaitable<upstream_result> upstream_pool::exchange(const http::request<http::string_body>& req,
                                                         bool head_request, std::string& scratch)
{
    if (tls_)
        return exchange_over<tls_connection_ptr>(req, head_request, scratch);
    return exchange_over<plain_connection>(req, head_request, scratch);
}

template<class Connection>
asio::awaitable<upstream_result> upstream_pool::exchange_over(const http::request<http::string_body>& req,
                                                              bool head_request, std::string& scratch)
{
    upstream_result result;
    // timeouts.upstream_response bounds the whole exchange (writing the request and reading the
    // answer), so that lock_ttl > upstream_connect + upstream_response keeps the lock alive to
    // the end (issue 8). Connecting has its own deadline and is not counted.
    std::optional<std::chrono::steady_clock::time_point> deadline;
    for (int attempt = 0; attempt < 2; ++attempt) {
        // Streams live behind unique_ptr: moving a beast::tcp_stream allocates a new impl.
        auto got = co_await acquire<Connection>(attempt == 0);
        if (got.ec) {
            result.ec = got.ec;
            co_return result;
        }
        Connection conn = std::move(got.conn);
        bool reused = got.reused;
        address_slot& slot = *got.slot.get();
        auto& stream = stream_of(conn);
        auto& tcp_layer = beast::get_lowest_layer(stream);
        if (reused)
            metrics_.upstream_connections_reused.fetch_add(1, std::memory_order_relaxed);

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
        tcp_layer.expires_at(*deadline);
        // Beast reads at most 512 bytes into an empty flat_buffer, so a typical JSON answer took
        // two recvmsg; one reservation holds most answers in one read (strace -c: 3.03 -> 2.01
        // recvmsg per first execution of a 568-byte answer).
        beast::flat_buffer buffer;
        buffer.reserve(16 * 1024);
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
            // the upstream may have run a POST that died without an answer. That holds across
            // addresses too: a written POST is never sent to another member of the fleet.
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
        if constexpr (!std::is_same_v<Connection, plain_connection>) {
            // The session to offer on the next connect: read now, since a TLS 1.3 server sends
            // its tickets after the handshake, and they were read with the answer.
            // A copy: OpenSSL marks a connection's own session not resumable when the
            // connection is freed without a close_notify (ssl_clear_bad_session), which is how
            // pooled HTTP connections end; the copy stays resumable.
            if (!reused) {
                SSL_SESSION* session = SSL_get1_session(stream.native_handle());
                if (session && SSL_SESSION_is_resumable(session) == 1)
                    slot.session.reset(SSL_SESSION_dup(session));
                if (session)
                    SSL_SESSION_free(session);
            }
        }
        if (result.response.keep_alive() && buffer.size() == 0) {
            put_idle(slot, std::move(conn));
        } else {
            error_code ignored;
            tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
            tcp_layer.socket().close(ignored);
        }
        co_return result;
    }
    // Both attempts failed on write: the upstream is not taking requests.
    metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
    result.ec = make_error_code(error::upstream_connect);
    co_return result;
}

} // namespace idemgate::gateway
