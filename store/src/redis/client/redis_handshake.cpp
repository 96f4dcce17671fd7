// SPDX-License-Identifier: Apache-2.0
// A redis_connection's start on each (re)connect: connect (TCP, TLS), the handshake (AUTH,
// SELECT, PING, ROLE in Sentinel mode), and the checks that run beside the traffic: the server's
// version and its maxmemory-policy.
#include "redis/client/redis_connection.hpp"

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::store::detail {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;
using boost::system::error_code;

asio::awaitable<error_code> redis_connection::connect()
{
    if (address_source_)
        address_ = address_source_();
    const auto addr = address_;
    if (addr.port == 0) {
        handshake_error_ = "no address yet (waiting for the sentinels to name the primary)";
        co_return make_error_code(asio::error::host_not_found_try_again);
    }
    connect_deadline_.expires_after(shared_->cfg.connect_timeout);
    auto ec = co_await transport_.connect(addr.host, addr.port, connect_deadline_);
    if (ec) {
        handshake_error_ = transport_.failure(); // a TLS failure says why (certificate, name)
        co_return ec;
    }
    if (stopped_) {
        transport_.close();
        co_return make_error_code(asio::error::operation_aborted);
    }
    co_return error_code{};
}

asio::awaitable<error_code> redis_connection::handshake()
{
    const auto& cfg = shared_->cfg;
    // Sentinel connections AUTH with the sentinels' own password, without a user.
    const auto& password = to_sentinel_ ? cfg.sentinel_password : cfg.password;
    const std::string_view username = to_sentinel_ ? std::string_view{} : std::string_view(cfg.username);
    if (!username.empty() || !password.empty()) {
        // AUTH password (the default user), or AUTH username password (an ACL user, Redis 6+).
        const bool acl_user = !username.empty();
        std::array<std::string_view, 3> auth{"AUTH", username, password};
        if (!acl_user)
            auth = {"AUTH", password, {}};
        std::span<const std::string_view> args(auth.data(), acl_user ? 3 : 2);
        auto r = co_await enqueue(args, true);
        if (r.ec) {
            handshake_error_ =
                (acl_user ? "AUTH (user " + printable_text(cfg.username) + "): " : "AUTH: ") + reply_text(r);
            co_return r.ec;
        }
    }
    if (cfg.db != 0 && !to_sentinel_) {
        auto db = std::to_string(cfg.db);
        std::array<std::string_view, 2> args{"SELECT", db};
        auto r = co_await enqueue(args, true);
        if (r.ec) {
            handshake_error_ = "SELECT " + db + ": " + reply_text(r);
            co_return r.ec;
        }
    }
    // PING proves the server speaks RESP and accepts commands from us (NOAUTH otherwise), so
    // ready() never reports a connection on which every command would fail.
    std::array<std::string_view, 1> ping{"PING"};
    auto r = co_await enqueue(ping, true);
    if (!r.ec && r.reply->type != REDIS_REPLY_STATUS)
        r.ec = make_error_code(error::store_protocol);
    if (r.ec) {
        handshake_error_ = "PING: " + reply_text(r);
        co_return r.ec;
    }
    if (cfg.mode == config::redis_mode::sentinel && !to_sentinel_ && !subscriber_) {
        // Sentinel mode: the address may be stale (a failover since the sentinels were asked);
        // only a primary is used.
        std::array<std::string_view, 1> role{"ROLE"};
        auto rr = co_await enqueue(role, true);
        if (rr.ec) {
            handshake_error_ = "ROLE: " + reply_text(rr);
            co_return rr.ec;
        }
        std::string_view what;
        if (rr.reply->type == REDIS_REPLY_ARRAY && rr.reply->elements > 0 &&
            rr.reply->element[0]->type == REDIS_REPLY_STRING)
            what = std::string_view(rr.reply->element[0]->str, rr.reply->element[0]->len);
        if (what != "master") {
            handshake_error_ = "ROLE: " + printable_text(what) + ", not the primary";
            if (shared_->on_primary_suspect)
                shared_->on_primary_suspect();
            co_return make_error_code(error::store_unavailable);
        }
    }
    co_return error_code{};
}

asio::awaitable<void> redis_connection::check_version(std::shared_ptr<redis_connection>)
{
    // reserve is SET ... NX PX ... GET, which needs Redis 7.0 (6.2 refuses NX with GET).
    std::array<std::string_view, 2> info{"INFO", "server"};
    auto server = co_await execute(info);
    if (stopped_ || server.ec || server.reply->type != REDIS_REPLY_STRING)
        co_return;
    std::string_view text(server.reply->str, server.reply->len);
    auto pos = text.find("redis_version:");
    if (pos == std::string_view::npos)
        co_return;
    auto version = text.substr(pos + 14, text.find_first_of("\r\n", pos) - pos - 14);
    int major = 0;
    for (char c : version.substr(0, version.find('.')))
        major = c >= '0' && c <= '9' ? major * 10 + (c - '0') : major;
    if (major < 7)
        log::error("redis 7.0 or newer is required (reserve uses SET NX GET); every reserve will fail",
                   {{"address", address_.to_string()}, {"redis_version", printable_text(version)}});
}

asio::awaitable<void> redis_connection::watch_eviction_policy(std::shared_ptr<redis_connection>,
                                                              std::uint64_t gen)
{
    // A Redis switched to allkeys-lru after start-up loses records silently, so the policy is
    // read again on every connection and periodically. One CONFIG GET pipelined with the
    // traffic: requests never wait for it.
    const auto interval = shared_->options.eviction_check_interval;
    auto stale = [&] { return gen != generation_ || !connected_ || stopped_; };
    for (;;) {
        co_await check_eviction_policy();
        if (stale() || interval <= interval.zero())
            co_return;
        policy_timer_.expires_after(interval); // also wakes a stale watcher of an older connection
        co_await policy_timer_.async_wait(as_tuple(use_awaitable));
        if (stale())
            co_return;
    }
}

asio::awaitable<void> redis_connection::check_eviction_policy()
{
    // Redis 7 answers several parameters at once, as name and value pairs in any order.
    std::array<std::string_view, 5> args{"CONFIG", "GET", "maxmemory-policy", "save", "appendonly"};
    auto r = co_await execute(args);
    if (stopped_)
        co_return;
    if (r.ec && r.ec != error::store_error_reply)
        co_return; // timeout or connection lost: nothing learned, the next check retries
    if (r.ec) {
        shared_->note_eviction_policy(std::nullopt, reply_text(r));
        shared_->note_persistence(std::nullopt);
        co_return;
    }
    std::optional<std::string_view> policy, save, appendonly;
    if (r.reply->type == REDIS_REPLY_ARRAY && r.reply->elements % 2 == 0) {
        for (std::size_t i = 0; i + 1 < r.reply->elements; i += 2) {
            const auto* name = r.reply->element[i];
            const auto* value = r.reply->element[i + 1];
            if (name->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING)
                continue;
            std::string_view n(name->str, name->len), v(value->str, value->len);
            (n == "maxmemory-policy" ? policy : n == "save" ? save : appendonly) = v;
        }
    }
    if (!policy)
        shared_->note_eviction_policy(std::nullopt, "unexpected reply to CONFIG GET maxmemory-policy");
    else
        shared_->note_eviction_policy(*policy);
    // Neither RDB save points nor AOF: a restart of Redis comes back empty.
    if (save && appendonly)
        shared_->note_persistence(!save->empty() || *appendonly == "yes");
    else
        shared_->note_persistence(std::nullopt);
}

asio::awaitable<void> redis_connection::watch_role(std::shared_ptr<redis_connection>, std::uint64_t gen)
{
    // A primary demoted while no sentinel reached us (or a partition that hid the switch) is
    // noticed within a second; the replica count feeds strict mode's refusal. One ROLE pipelined
    // with the traffic per connection per second.
    constexpr auto interval = std::chrono::seconds(1);
    auto stale = [&] { return gen != generation_ || !connected_ || stopped_; };
    for (;;) {
        std::array<std::string_view, 1> role{"ROLE"};
        auto r = co_await execute(role);
        if (stale())
            co_return;
        const redisReply* reply = r.reply.get();
        if (!r.ec && reply && reply->type == REDIS_REPLY_ARRAY && reply->elements > 0 &&
            reply->element[0]->type == REDIS_REPLY_STRING) {
            std::string_view what(reply->element[0]->str, reply->element[0]->len);
            if (what == "master") {
                long long replicas = -1;
                if (reply->elements >= 3 && reply->element[2]->type == REDIS_REPLY_ARRAY)
                    replicas = static_cast<long long>(reply->element[2]->elements);
                shared_->stats.connected_replicas.store(replicas, std::memory_order_relaxed);
                const auto wanted = static_cast<long long>(shared_->cfg.min_replicas_ack);
                if (shared_->cfg.consistency == config::redis_consistency::strict && replicas >= 0 &&
                    replicas <= wanted && shared_->replicas_warned.exchange(replicas) != replicas)
                    log::warn(replicas < wanted
                                  ? "strict consistency: fewer replicas connected than "
                                    "min_replicas_ack; every new key is refused with 503"
                                  : "strict consistency with only min_replicas_ack replicas "
                                    "connected: losing one refuses every new key until it rejoins",
                              {{"address", address_.to_string()},
                               {"replicas_connected", replicas},
                               {"min_replicas_ack", wanted}});
            } else if (shared_->cfg.mode == config::redis_mode::sentinel) {
                log::warn("redis says it is no longer the primary (ROLE); asking the sentinels again",
                          {{"address", address_.to_string()}, {"role", printable_text(what)}});
                if (shared_->on_primary_suspect)
                    shared_->on_primary_suspect();
                fail_pending(make_error_code(error::store_unavailable));
                on_lost(gen, "demoted", {});
                co_return;
            }
        }
        role_timer_.expires_after(interval); // also wakes a stale watcher of an older connection
        co_await role_timer_.async_wait(as_tuple(use_awaitable));
        if (stale())
            co_return;
    }
}

} // namespace idemgate::store::detail
