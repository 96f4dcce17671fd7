// SPDX-License-Identifier: Apache-2.0
#pragma once
// One I/O thread's keep-alive connections to one upstream, and the request/response exchange.
#include "upstream/answer_body.hpp"
#include "upstream/upstream_fleet.hpp"

#include <array>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <chrono>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/exchange_watch.hpp>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

struct ssl_session_st; // OpenSSL's SSL_SESSION

namespace idemgate::gateway {

namespace detail {
struct upstream_tls;            // tls.hpp: the upstream's client context and verified name
struct upstream_tls_connection; // upstream_pool.cpp: a TLS stream over a tcp_stream
struct tls_connection_deleter {
    void operator()(upstream_tls_connection* c) const noexcept;
};
struct tls_session_deleter {
    void operator()(ssl_session_st* s) const noexcept;
};
} // namespace detail

namespace http = boost::beast::http;
using tcp = boost::asio::ip::tcp;

struct upstream_result {
    boost::system::error_code ec; // error::upstream_connect / _timeout / _protocol / _too_large
    bool sent = false;            // the whole request was written (an error after it: outcome unknown)
    std::string address;          // the address used, or the last one tried ("10.0.0.5:8443"); logs
    http::response<http::string_body, span_fields> response;
    // An answer larger than limits.max_record_body: `response` holds its head and first bytes,
    // `rest` reads the others. Its framing: `length` (its Content-Length) or none (chunked, or
    // until the connection closes).
    std::unique_ptr<answer_body> rest;
    std::optional<std::uint64_t> length;
    // error::upstream_too_large with `response` holding the answer's head (no body): the upstream
    // answered, over limits.max_response_body (announced by Content-Length when `length` is set).
    bool head_only = false;
    // With `ec` after the request was written: the status of an answer that began (its status
    // line arrived whole) and could not be read to its end (a head over
    // limits.max_response_header_bytes, framing refused, bare LF, cut or timed out); 0 when none
    // began. Such an answer is an outcome of the upstream by that status, not an unknown one.
    unsigned began_status = 0;
};

// A request as written upstream: its head, then its body.
using request_buffers = std::array<boost::asio::const_buffer, 2>;

// Whether a request written on a reused connection that then died without an answer may go out
// again on a fresh one. RFC 9110 9.2.2 allows it for idempotent methods; a route that guards a
// method says that method is not safe to repeat, so its requests are never sent twice
// (`never`), and they take an idle connection only after its liveness check, as a POST does.
enum class resend_policy : unsigned char { idempotent_methods, never };

// One request as the pool sends it: the request (its method), its head and body as written
// (`buffers`; the head made by head_splice.hpp, or rendered by message_buffers), whether it is a
// HEAD request (no body follows the answer), the resend policy and the route's effective
// deadlines (`timeouts`: route over upstream over global, resolved at load).
struct upstream_call {
    const http::request<http::string_body, span_fields>& req;
    const request_buffers& buffers;
    bool head_request = false;
    resend_policy resend = resend_policy::never;
    const config::route_timeouts& timeouts;
};

// Not thread-safe: owned by one I/O thread and used from its executor only. Plain HTTP, or
// HTTPS when `tls` is set (upstreams.<name>.tls): the same pooling, retries and deadlines; the
// handshake counts as connecting, and each address's last TLS session is offered again on
// reconnect. The addresses come from the upstream's fleet (shared by every thread): each
// request picks one (balance), idle connections are kept per address.
class upstream_pool : public std::enable_shared_from_this<upstream_pool> {
public:
    upstream_pool(boost::asio::any_io_executor ex, std::shared_ptr<upstream_fleet> fleet,
                  const config::config& cfg, metrics& m, std::shared_ptr<detail::upstream_tls> tls = nullptr);
    ~upstream_pool();
    upstream_pool(const upstream_pool&) = delete;
    upstream_pool& operator=(const upstream_pool&) = delete;

    // Takes the fleet's current addresses and later ones (call once, on the pool's executor,
    // after make_shared).
    void attach();

    // A pooled connection is checked before reuse (has the upstream closed it, or sent something
    // unasked?), except for a request that can be sent again on a new connection if this one
    // turns out dead (an idempotent method) on a connection handed back less than this long ago.
    // Far below any keep-alive timeout servers ship with (nginx 75 s, Node 5 s, gunicorn 2 s),
    // and long enough that a busy pool skips the check. A request that cannot be sent twice
    // (POST, PATCH) is always checked: an upstream that died or closed its connections a moment
    // ago must not cost it a 502. The check: a plain connection the event loop has seen nothing
    // on since its last read emptied it is taken as it is (quiet_since_drained, no system call);
    // any other (TLS, or readiness seen) is peeked without blocking.
    static constexpr std::chrono::milliseconds liveness_check_after{100};

    // A new address set from the fleet (on the pool's executor): idle connections to addresses
    // that remain are kept; those to addresses that went are closed now (in use: when done).
    void update_addresses(std::shared_ptr<const address_set> set);

    // Sends `req` (already re-framed) and reads the full response under the route's effective
    // deadlines (`timeouts`: route over upstream over global, resolved at load).
    // A connect failure (nothing sent) moves on to the next address, all under one
    // upstream_connect. A reused connection whose write fails is retried once on a
    // fresh connection (the race every keep-alive proxy has with the upstream's idle close); one
    // that dies after the request was written is retried only under resend_policy::
    // idempotent_methods and only for idempotent methods (RFC 9110 9.2.2) - a POST written to one
    // address is never sent to another, nor is any request under resend_policy::never.
    // idemgate_upstream_duration_seconds{upstream}: the caller times the whole exchange.
    void observe_exchange(std::chrono::steady_clock::duration took);

    // `call` (and what it refers to) must live until the exchange ends. What came of it goes into
    // `result` (default-constructed by the caller, so it is not carried back through the frame).
    boost::asio::awaitable<void> exchange(const upstream_call& call, upstream_result& result);

private:
    using plain_connection = std::unique_ptr<boost::beast::tcp_stream>;
    using tls_connection_ptr =
        std::unique_ptr<detail::upstream_tls_connection, detail::tls_connection_deleter>;

    // A pooled connection and when it was handed back.
    template<class Connection>
    struct idle_connection {
        Connection conn;
        std::chrono::steady_clock::time_point since;
    };

    // One address as this thread sees it: its idle connections (the last handed back on top) and
    // TLS session.
    struct address_slot {
        std::shared_ptr<upstream_address> address;
        std::vector<idle_connection<plain_connection>> idle;
        std::vector<idle_connection<tls_connection_ptr>> idle_tls;
        std::unique_ptr<ssl_session_st, detail::tls_session_deleter> session; // offered on reconnect
        bool retired = false; // no longer in the fleet: connections close when done
    };

    // A request's hold on one address: counts it as pending (least_pending) while alive.
    class pending_guard {
    public:
        pending_guard() = default;
        explicit pending_guard(std::shared_ptr<address_slot> slot);
        pending_guard(pending_guard&& other) noexcept = default;
        pending_guard& operator=(pending_guard&& other) noexcept;
        ~pending_guard();
        address_slot* get() const noexcept { return slot_.get(); }
        explicit operator bool() const noexcept { return slot_ != nullptr; }

    private:
        std::shared_ptr<address_slot> slot_;
    };

    template<class Connection>
    struct acquired {
        boost::system::error_code ec;
        pending_guard slot;
        Connection conn;
        bool reused = false;
        std::string last_address; // the last address tried (its label), for the logs
    };

    template<class Connection>
    boost::asio::awaitable<void> exchange_over(const upstream_call& call, upstream_result& result);
    // Whether acquire may hand out an idle connection, and whether it is checked first.
    enum class idle_reuse {
        never,       // a new connection
        checked,     // an idle one, checked first
        recent_as_is // an idle one, checked only when idle for liveness_check_after
    };
    // An idle connection to the address balance and health pick, as `reuse` allows, without a
    // coroutine (most requests find one). Without one, `picked` is the address acquire() should
    // try first (null: none was picked).
    template<class Connection>
    acquired<Connection> take_ready(idle_reuse reuse, std::shared_ptr<address_slot>& picked);
    // An address (balance, health) and a connection to it: idle as `reuse` allows, else new.
    // `first`, when given, is tried first, without looking for an idle connection to it again.
    // Every address tried shares one `connect_timeout` (the route's upstream_connect).
    template<class Connection>
    boost::asio::awaitable<acquired<Connection>>
    acquire(idle_reuse reuse, std::shared_ptr<address_slot> first, std::chrono::milliseconds connect_timeout);
    template<class Connection>
    Connection take_idle(address_slot& slot, idle_reuse reuse);
    template<class Connection>
    boost::asio::awaitable<boost::system::error_code> connect(Connection& conn, address_slot& slot,
                                                              std::chrono::steady_clock::duration budget);
    template<class Connection>
    void put_idle(address_slot& slot, Connection conn);
    // The next address to try, skipping `tried`; nullptr when there is none left.
    std::shared_ptr<address_slot> pick(std::span<const address_slot* const> tried);
    // A read buffer for one exchange: a spare one of an earlier exchange, or a new one.
    boost::beast::flat_buffer take_buffer();
    void give_back(boost::beast::flat_buffer&& buffer);

    boost::asio::any_io_executor executor_;
    exchange_watch watch_; // the deadlines of the exchanges in flight
    std::shared_ptr<upstream_fleet> fleet_;
    std::size_t max_idle_;
    const config::config& config_;
    metrics& metrics_;
    std::shared_ptr<detail::upstream_tls> tls_;
    std::vector<std::shared_ptr<address_slot>> slots_;
    std::size_t idle_total_ = 0; // idle connections over every slot (max_idle_connections)
    std::size_t cursor_ = 0;     // round robin position (this thread)
    std::vector<boost::beast::flat_buffer> spare_buffers_; // emptied read buffers, reused
};

} // namespace idemgate::gateway
