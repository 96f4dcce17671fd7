// SPDX-License-Identifier: Apache-2.0
// One I/O thread's keep-alive pool for one upstream: which address (balance, health), idle
// connections and their liveness check before reuse, and connecting (with TLS, the handshake and
// session resumption). One request's exchange over a pooled connection: upstream_exchange.cpp.
#include "upstream/upstream_pool.hpp"

#include "upstream/upstream_connection.hpp"
#include "upstream/upstream_tls.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/container/small_vector.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/common/ready_read.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <type_traits>

namespace idemgate::gateway {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = boost::asio::ssl;
using boost::system::error_code;

namespace detail {

void tls_connection_deleter::operator()(upstream_tls_connection* c) const noexcept
{
    delete c;
}

void tls_session_deleter::operator()(ssl_session_st* s) const noexcept
{
    SSL_SESSION_free(s);
}

} // namespace detail

upstream_pool::upstream_pool(asio::any_io_executor ex, std::shared_ptr<upstream_fleet> fleet,
                             const config::config& cfg, metrics& m, std::shared_ptr<detail::upstream_tls> tls)
    : executor_(std::move(ex)), watch_(executor_), fleet_(std::move(fleet)),
      max_idle_(fleet_->config().max_idle_connections), config_(cfg), metrics_(m), tls_(std::move(tls))
{
}

upstream_pool::~upstream_pool() = default;

void upstream_pool::attach()
{
    update_addresses(fleet_->subscribe(weak_from_this(), executor_));
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
            beast::get_lowest_layer(detail::stream_of(c.conn)).socket().close(ignored);
        for (auto& c : slot->idle_tls)
            beast::get_lowest_layer(detail::stream_of(c.conn)).socket().close(ignored);
        idle_total_ -= slot->idle.size() + slot->idle_tls.size();
        slot->idle.clear();
        slot->idle_tls.clear();
    }
    slots_ = std::move(next);
}

std::shared_ptr<upstream_pool::address_slot> upstream_pool::pick(std::span<const address_slot* const> tried)
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

beast::flat_buffer upstream_pool::take_buffer()
{
    if (spare_buffers_.empty()) {
        // Beast reads at most 512 bytes into an empty flat_buffer, so a typical JSON answer would
        // take two reads; one reservation holds most answers in one read.
        beast::flat_buffer buffer;
        buffer.reserve(16 * 1024);
        return buffer;
    }
    auto buffer = std::move(spare_buffers_.back());
    spare_buffers_.pop_back();
    return buffer;
}

void upstream_pool::give_back(beast::flat_buffer&& buffer)
{
    // A few spares (the exchanges one thread runs at once), none grown large by a big answer.
    constexpr std::size_t max_spares = 8;
    constexpr std::size_t max_capacity = 64 * 1024;
    if (spare_buffers_.size() >= max_spares || buffer.capacity() < 16 * 1024 ||
        buffer.capacity() > max_capacity)
        return;
    buffer.clear();
    spare_buffers_.push_back(std::move(buffer));
}

template<class Connection>
Connection upstream_pool::take_idle(address_slot& slot, idle_reuse reuse)
{
    auto& idle = [&slot]() -> auto&
    {
        if constexpr (std::is_same_v<Connection, plain_connection>)
            return slot.idle;
        else
            return slot.idle_tls;
    }
    ();
    const auto now = std::chrono::steady_clock::now();
    while (!idle.empty()) {
        Connection c = std::move(idle.back().conn);
        const auto idle_for = now - idle.back().since;
        idle.pop_back();
        --idle_total_;
        // Handed back a moment ago (as under load, where the system call would be paid on every
        // request), for a request that can go out again on a new connection should this one
        // turn out dead.
        if (reuse == idle_reuse::recent_as_is && idle_for < liveness_check_after)
            return c;
        auto& socket = beast::get_lowest_layer(detail::stream_of(c)).socket();
        // A plain connection whose answer's last read emptied it, and on which the event loop
        // has polled no readiness since (no byte, FIN or error: quiet_since_drained), is taken
        // without a system call: nginx's rule for its cached upstream connections. The window it
        // leaves, as nginx's does: a FIN (or bytes, or a reset) the kernel took after this
        // thread's last epoll_wait. Asio's scheduler polls epoll once per pass over the thread's
        // queue, and a request's own bytes (and a Redis store's reply) come through such a poll,
        // so the window is the time since then: microseconds when idle, up to one pass under load.
        // A POST written into a connection found dead that way is never sent again: its outcome
        // is unknown (the key held, as for any upstream that dies after the request went out);
        // the promise holds, one answer is lost. (A write that fails outright goes out again on
        // a new connection: nothing of it was sent.) TLS connections, builds without the
        // vendored read (the mark is never set) and connections with readiness seen are peeked.
        if constexpr (std::is_same_v<Connection, plain_connection>)
            if (quiet_since_drained(socket))
                return c;
        // A peek without blocking: 0 means the upstream closed it while idle, data means it sent
        // something unasked (over TLS, a close_notify); either way it is not safe to reuse. Here
        // too after the event loop saw the socket readable: that may have been the answer's own
        // last bytes, read before the event was polled, and the peek then finds nothing.
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
    auto& tcp_layer = beast::get_lowest_layer(detail::stream_of(conn));
    // A connection comes back with no stream deadline set (the exchange's is the pool's watch),
    // so none is cleared here.
    if (!slot.retired && idle_total_ < max_idle_) {
        const auto now = std::chrono::steady_clock::now();
        if constexpr (std::is_same_v<Connection, plain_connection>)
            slot.idle.push_back({std::move(conn), now});
        else
            slot.idle_tls.push_back({std::move(conn), now});
        ++idle_total_;
        return;
    }
    error_code ignored;
    tcp_layer.socket().shutdown(tcp::socket::shutdown_both, ignored);
    tcp_layer.socket().close(ignored);
}

// Connects a new connection to one address, and over TLS shakes hands, all within `budget`
// (what is left of the route's upstream_connect). Any failure here happened before a byte of the
// request was sent: a connect failure.
template<class Connection>
asio::awaitable<error_code> upstream_pool::connect(Connection& conn, address_slot& slot,
                                                   std::chrono::steady_clock::duration budget)
{
    auto& tcp_layer = beast::get_lowest_layer(detail::stream_of(conn));
    tcp_layer.expires_after(budget);
    auto [ec] = co_await tcp_layer.async_connect(slot.address->endpoint, use_tuple);
    if (ec) {
        metrics_.upstream_connect_errors.fetch_add(1, std::memory_order_relaxed);
        co_return make_error_code(error::upstream_connect);
    }
    error_code ignored;
    tcp_layer.socket().set_option(tcp::no_delay(true), ignored);
    enable_read_hints(tcp_layer.socket()); // reads know when the answer emptied the socket
    metrics_.upstream_connections_opened.fetch_add(1, std::memory_order_relaxed);
    if constexpr (!std::is_same_v<Connection, plain_connection>) {
        auto& stream = conn->stream;
        SSL* native = stream.native_handle();
        error_code hec;
        const std::string& name = tls_->name.empty() ? slot.address->host : tls_->name;
        std::string why = detail::prepare_client_ssl(native, *tls_, name, slot.session.get());
        if (why.empty()) {
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
    tcp_layer.expires_never(); // the connect deadline ends here; the exchange's is the pool's watch
    co_return error_code{};
}

void upstream_pool::observe_exchange(std::chrono::steady_clock::duration took)
{
    fleet_->counters().duration.observe(took);
}

template<class Connection>
upstream_pool::acquired<Connection> upstream_pool::take_ready(idle_reuse reuse,
                                                              std::shared_ptr<address_slot>& picked)
{
    acquired<Connection> out;
    out.ec = make_error_code(error::upstream_connect);
    if (reuse == idle_reuse::never || !(picked = pick({})))
        return out;
    out.last_address = picked->address->label;
    pending_guard guard(picked);
    out.conn = take_idle<Connection>(*picked, reuse);
    if (out.conn) {
        out.ec = {};
        out.reused = true;
        out.slot = std::move(guard);
        picked = nullptr;
    }
    return out;
}

template<class Connection>
asio::awaitable<upstream_pool::acquired<Connection>>
upstream_pool::acquire(idle_reuse reuse, std::shared_ptr<address_slot> first,
                       std::chrono::milliseconds connect_timeout)
{
    acquired<Connection> out;
    // One upstream_connect for every address tried, so that lock_ttl's bound (two connects +
    // the exchange, config::warnings) holds however many addresses there are.
    auto deadline = std::chrono::steady_clock::now() + connect_timeout;
    boost::container::small_vector<const address_slot*, 4> tried;
    out.ec = make_error_code(error::upstream_connect);
    for (;;) {
        const bool looked_for_idle = first != nullptr;
        auto slot = looked_for_idle ? std::move(first) : pick(tried);
        first = nullptr;
        if (!slot)
            co_return out;
        tried.push_back(slot.get());
        out.last_address = slot->address->label;
        pending_guard guard(slot);
        if (reuse != idle_reuse::never && !looked_for_idle) {
            out.conn = take_idle<Connection>(*slot, reuse);
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

// The two connection types the exchange (upstream_exchange.cpp) takes and hands back.
template upstream_pool::acquired<upstream_pool::plain_connection>
upstream_pool::take_ready<upstream_pool::plain_connection>(idle_reuse, std::shared_ptr<address_slot>&);
template upstream_pool::acquired<upstream_pool::tls_connection_ptr>
upstream_pool::take_ready<upstream_pool::tls_connection_ptr>(idle_reuse, std::shared_ptr<address_slot>&);
template asio::awaitable<upstream_pool::acquired<upstream_pool::plain_connection>>
    upstream_pool::acquire<upstream_pool::plain_connection>(idle_reuse, std::shared_ptr<address_slot>,
                                                            std::chrono::milliseconds);
template asio::awaitable<upstream_pool::acquired<upstream_pool::tls_connection_ptr>>
    upstream_pool::acquire<upstream_pool::tls_connection_ptr>(idle_reuse, std::shared_ptr<address_slot>,
                                                              std::chrono::milliseconds);
template void upstream_pool::put_idle<upstream_pool::plain_connection>(address_slot&, plain_connection);
template void upstream_pool::put_idle<upstream_pool::tls_connection_ptr>(address_slot&, tls_connection_ptr);

} // namespace idemgate::gateway
