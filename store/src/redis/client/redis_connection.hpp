// SPDX-License-Identifier: Apache-2.0
#pragma once
// One pipelined Redis connection, private to the store library.
//
// hiredis only parses replies (redisReader); commands are written in RESP straight into the
// output buffer; Asio owns the socket. Commands are appended to an output buffer and to a FIFO of pending
// commands; one writer coroutine writes everything queued in one write, one reader coroutine
// hands replies to the FIFO's front in order. Each command waits on its own steady_timer,
// which is both its deadline and its "reply arrived" event (the reader cancels it).
//
// Everything here runs on the connection's executor (one I/O thread); only shutdown() may be
// called from elsewhere.
#include "redis/client/redis_transport.hpp"
#include "redis/redis_health.hpp"
#include "settle_notifier.hpp"

#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <idemgate/config/config.hpp>
#include <idemgate/store/redis_store.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct redisReply;

namespace idemgate::store::detail {

class redis_connection;

struct reply_deleter {
    void operator()(redisReply* r) const noexcept;
};
using reply_ptr = std::unique_ptr<redisReply, reply_deleter>;

// Appends one command in RESP (an array of bulk strings) straight into `out` (redis_io.cpp).
void append_command(std::string& out, std::span<const std::string_view> args);

// What a command got: ec set on timeout / unavailable / protocol / error reply; `reply` is
// set whenever a reply arrived (also for an error reply, so callers can read its text).
struct command_result {
    boost::system::error_code ec;
    reply_ptr reply;
    std::string node; // for an error reply: the host:port of the server that sent it
};

// `text` for a log line: at most 200 bytes (then "..."), bytes outside printable ASCII as '?'.
std::string printable_text(std::string_view text);

// What the server said, for a log line: an error reply's text (or what went wrong if no reply
// came), through printable_text.
std::string reply_text(const command_result& r);

// Lets one log line through per interval and counts the others. Thread-safe, lock-free.
class log_throttle {
public:
    // True when a line may be logged now; `not_logged` is then how many were held back since
    // the last one that was.
    bool allow(std::chrono::milliseconds interval, std::uint64_t& not_logged) noexcept;

private:
    std::atomic<std::int64_t> next_{0}; // steady_clock ticks; before it, only count
    std::atomic<std::uint64_t> held_back_{0};
};

// State shared by every connection of one backend.
struct redis_shared {
    redis_shared(config::redis_config c, redis_options o)
        : cfg(std::move(c)), options(o), tls(make_redis_tls_context(cfg.tls))
    {
    }
    const config::redis_config cfg;
    const redis_options options;
    const std::shared_ptr<redis_tls_context> tls; // one OpenSSL context per backend; null = plain TCP
    redis_stats stats;
    redis_health health{cfg, stats};            // refusing, a refused command, eviction, persistence
    std::atomic<bool> version_checked{false};   // the Redis version is checked once per backend
    std::size_t max_pending = 100000;           // commands queued or awaiting a reply
    std::size_t max_pending_bytes = 256u << 20; // bytes queued but not yet written
    settle_notifier notifier{true};             // wait mode: waiters by channel (= record key)
    // Sentinel mode: a data connection found it is not talking to the primary (ROLE, READONLY);
    // the monitor re-asks the sentinels. Set once before any connection starts.
    std::function<void()> on_primary_suspect;
    // Sentinel mode: bumped whenever the sentinels name another primary. A connection that has
    // not seen the latest value checks its address before it sends anything.
    std::atomic<std::uint64_t> primary_epoch{0};
    // consistency strict: the replica count last warned about (ROLE), so each change logs once.
    std::atomic<long long> replicas_warned{-1};
    // consistency strict, sentinel mode: after the primary stalled (a write pause, a partition)
    // the sentinels may have promoted one of its replicas that the gateway has not heard of yet,
    // while its other replicas still acknowledge its writes. Until the sentinels name another
    // primary, or `suspect_for` after the last stall, a write needs every replica the primary had
    // when it stalled: an acknowledgement by a replica that was not promoted is not enough.
    static constexpr std::chrono::seconds suspect_for{10};
    std::atomic<long long> suspect_replicas{-1};
    std::atomic<std::int64_t> suspect_until_ms{0}; // steady clock, milliseconds
    // A stall of the primary's connection was seen (see suspect_replicas).
    void primary_stalled() noexcept;
    // How many replicas must acknowledge a strict write now: min_replicas_ack, or more while
    // the primary is suspect.
    long long acks_wanted() const noexcept;

    // Registers a connection that follows the primary (one per I/O thread, plus subscribers).
    void add_follower(const std::shared_ptr<redis_connection>& c);
    // The sentinels named another primary: bumps primary_epoch and tells every follower, each on
    // its own thread, to close its connection if it is to another address. Thread-safe.
    void primary_switched();

    // Records what CONFIG GET maxmemory-policy answered (`policy`), or that it was refused
    // (nullopt; `why` says how), sets stats.eviction_safe and logs each change once: an error
    // when the policy may evict, info when it is noeviction again, a warning when unreadable.
    // Called by every connection's check; thread-safe.
    void note_eviction_policy(std::optional<std::string_view> policy, std::string_view why = {});
    // What CONFIG GET said of save and appendonly (nullopt: refused or unreadable).
    void note_persistence(std::optional<bool> persists) { health.note_persistence(persists); }

    // Logs an error reply to `command` (what `operation` sent), rate-limited by
    // options.error_log_interval. Thread-safe, lock-free.
    void log_error_reply(std::string_view operation, std::string_view command, const command_result& r);

    // A completed record fewer than min_replicas_ack replicas acknowledged (`acked`; -1: WAIT
    // failed, `r` says how). Rate-limited like log_error_reply.
    void log_unreplicated(std::string_view key, long long acked, const command_result& r);

    // Logs a stored value at `key` that did not decode (`why`), rate-limited like
    // log_error_reply: a wrong encryption key makes every replay fail. Thread-safe, lock-free.
    void log_corrupt_record(std::string_view key, std::size_t bytes, std::string_view why);

private:
    std::mutex policy_mutex_;
    bool policy_read_ = false; // some check got an answer (policy or refusal)
    std::string last_policy_;  // as last read; "" = refused
    log_throttle error_reply_log_;
    log_throttle corrupt_record_log_;
    log_throttle unreplicated_log_;
    std::mutex followers_mutex_;
    std::vector<std::weak_ptr<redis_connection>> followers_;
};

// A connection in subscriber mode (wait mode's notifications): pub/sub messages go to
// on_message, every other reply to its command as usual; it skips the version and eviction
// checks (refused in subscribed state) and does not count towards the store's readiness.
struct subscriber_hooks {
    std::function<void(std::string_view channel, std::string_view payload)> on_message;
    std::function<void()> on_up;   // after each (re)connect and handshake
    std::function<void()> on_lost; // the connection was lost (or shut down)
    // Set: every ["sunsubscribe", channel, n] is handed here instead of answering a command
    // (the server sends it unasked when a sharded channel's slot leaves the node, and it looks
    // like the answer to SUNSUBSCRIBE, which is then sent with send_unanswered).
    std::function<void(std::string_view channel)> on_shard_unsubscribe;
};

class redis_connection : public std::enable_shared_from_this<redis_connection> {
public:
    redis_connection(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared);
    redis_connection(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                     subscriber_hooks hooks);
    // A connection to one node (Redis Cluster): `address` instead of store.redis.address.
    redis_connection(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                     config::endpoint address);

    // Asked for the address before every connect attempt (a subscriber that follows the
    // cluster's nodes; a data connection that follows Sentinel's primary). Set before start().
    void set_address_source(std::function<config::endpoint()> source);
    // This connection talks to a Sentinel: AUTH with the sentinel password, no SELECT, no ROLE
    // check. Set before start() (with subscriber hooks).
    void talk_to_sentinel() { to_sentinel_ = true; }
    const config::endpoint& address() const noexcept { return address_; }

    // Starts connecting (and reconnecting with backoff) in the background.
    void start();
    // Closes the connection (its pending commands fail with store_unavailable) when it is to
    // an address other than the one the address source names now. Callable from any thread.
    void follow_primary();
    // Closes for good; pending commands fail with store_unavailable. Callable from any thread.
    void shutdown();
    // True while connected and past AUTH / SELECT.
    bool up() const noexcept { return up_; }
    // No command queued or awaiting its reply (call on the connection's executor).
    bool idle() const noexcept { return pending_.empty() && waiting_.empty() && out_.empty(); }

    // Sends one command; fails fast with store_unavailable while not up.
    boost::asio::awaitable<command_result> execute(std::span<const std::string_view> args);
    // Writes a command whose reply is a push (SUNSUBSCRIBE with on_shard_unsubscribe set), so no
    // command waits for it. False (nothing sent) while not up.
    bool send_unanswered(std::span<const std::string_view> args);
    // Two commands in the same batch, in this order, each with its own result; both fail as
    // store_unavailable (nothing sent) while the connection is not up.
    boost::asio::awaitable<std::pair<command_result, command_result>>
    execute_pair(std::span<const std::string_view> first, std::span<const std::string_view> second);
    // ASKING immediately followed by the command (Redis Cluster ASK redirect).
    boost::asio::awaitable<command_result> execute_asking(std::span<const std::string_view> args);

private:
    struct pending_command;

    static void bump(std::atomic<std::uint64_t>& counter) noexcept
    {
        counter.fetch_add(1, std::memory_order_relaxed);
    }

    boost::asio::awaitable<void> run(std::shared_ptr<redis_connection> self);
    boost::asio::awaitable<boost::system::error_code> connect();
    boost::asio::awaitable<boost::system::error_code> handshake();
    boost::asio::awaitable<void> read_loop(std::shared_ptr<redis_connection> self, std::uint64_t gen);
    boost::asio::awaitable<void> write_loop(std::shared_ptr<redis_connection> self, std::uint64_t gen);
    // Once per backend: the Redis version (>= 7), logged.
    boost::asio::awaitable<void> check_version(std::shared_ptr<redis_connection> self);
    // For one connection (generation `gen`): reads maxmemory-policy now and then every
    // eviction_check_interval until the connection is lost.
    boost::asio::awaitable<void> watch_eviction_policy(std::shared_ptr<redis_connection> self,
                                                       std::uint64_t gen);
    boost::asio::awaitable<void> check_eviction_policy();
    // Sentinel and standalone mode: ROLE every second on a connection that stays up. Records the
    // replicas the primary reports; in Sentinel mode, a node that is no longer the primary is
    // left at once.
    boost::asio::awaitable<void> watch_role(std::shared_ptr<redis_connection> self, std::uint64_t gen);
    // Leaves the current connection when the address source names another address (on the
    // connection's executor). True when it did.
    bool leave_if_moved();
    // Whether the address source still names the address this connection is to.
    bool address_current() const;
    // submit() then finish(): the command's reply, its deadline, or store_unavailable at once.
    boost::asio::awaitable<command_result> enqueue(std::span<const std::string_view> args, bool handshake,
                                                   bool asking = false);
    // Queues one command (sent now, or when the connection attempt under way is up); null when
    // it fails fast (down, stopped, queue full). finish() waits for its reply or its deadline.
    std::shared_ptr<pending_command> submit(std::span<const std::string_view> args, bool handshake,
                                            bool asking);
    // Waits for `cmd`'s reply or deadline (store_unavailable at once for a null `cmd`); `self`,
    // when given, keeps the connection alive meanwhile.
    boost::asio::awaitable<command_result> finish(std::shared_ptr<pending_command> cmd,
                                                  std::shared_ptr<redis_connection> self = nullptr);

    void on_lost(std::uint64_t gen, std::string_view why, boost::system::error_code ec);
    void fail_pending(boost::system::error_code ec); // every command, sent or waiting
    void fail_sent(boost::system::error_code ec);    // the sent ones; the waiting stay
    void send_waiting();
    void check_stall();
    void arm_sweep(std::chrono::steady_clock::time_point at);
    void sweep();
    void do_shutdown();

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    config::endpoint address_;
    std::function<config::endpoint()> address_source_;
    std::optional<subscriber_hooks> subscriber_;
    bool to_sentinel_ = false;
    bool follows_primary_ = false;          // Sentinel mode: closed when the sentinels name another primary
    redis_transport transport_;             // TCP or TLS
    boost::asio::steady_timer wake_writer_; // cancelled to wake an idle writer
    boost::asio::steady_timer lost_;        // cancelled when the connection is lost
    boost::asio::steady_timer backoff_;
    boost::asio::steady_timer connect_deadline_;
    boost::asio::steady_timer sweep_; // the earliest command deadline (arm_sweep)
    std::chrono::steady_clock::time_point sweep_at_{};
    std::uint64_t sweep_generation_ = 0;
    bool sweep_armed_ = false;
    boost::asio::steady_timer policy_timer_;               // next maxmemory-policy check; cancelled on loss
    boost::asio::steady_timer role_timer_;                 // next ROLE check; cancelled on loss
    std::uint64_t seen_primary_epoch_ = 0;                 // shared_->primary_epoch when last checked
    std::deque<std::shared_ptr<pending_command>> pending_; // awaiting replies, in send order
    std::deque<std::shared_ptr<pending_command>> waiting_; // queued during a connect attempt
    std::string out_;                                      // formatted commands not yet handed to the writer
    std::string writing_;                                  // the writer's current batch
    std::string handshake_error_;                          // what AUTH / SELECT / PING answered, for the log
    std::uint64_t generation_ = 0;  // bumped per connection; stale reader/writer coroutines exit
    bool connected_ = false;        // socket open, reader and writer running
    bool up_ = false;               // connected_ and handshake done
    bool connecting_ = false;       // a connect attempt (connect + handshake) is under way
    bool prompt_reconnect_ = false; // on_lost chose to connect again without the backoff
    std::optional<std::chrono::steady_clock::time_point> last_prompt_; // when it last did
    bool writer_idle_ = false;
    bool stopped_ = false;
};

// One command on its way: queued, sent, or answered (defined here for redis_connection.cpp and
// redis_io.cpp).
struct redis_connection::pending_command {
    explicit pending_command(const boost::asio::any_io_executor& ex) : event(ex) {}
    // Never expires by itself (its expiry is the end of time): cancelled by the reader when the
    // reply arrives, by fail_pending, or by the sweep once `deadline` has passed.
    boost::asio::steady_timer event;
    std::chrono::steady_clock::time_point sent;
    std::chrono::steady_clock::time_point deadline; // sent + command_timeout
    std::string payload; // formatted command, kept only while waiting for a connection
    boost::system::error_code ec;
    reply_ptr reply;
    std::string node;       // the server that sent an error reply
    bool done = false;      // ec/reply are final
    bool expired = false;   // the sweep found it past its deadline and woke its waiter
    bool abandoned = false; // the caller gave up (timeout): its reply is read and dropped
};

// Where a session's commands go: one connection (standalone), or the node serving the key's
// slot (cluster). `key` is the one key the command touches.
class command_router {
public:
    virtual ~command_router() = default;
    virtual boost::asio::awaitable<command_result> execute(std::string_view key,
                                                           std::span<const std::string_view> args) = 0;
    virtual void shutdown() = 0;
};

class single_router final : public command_router {
public:
    explicit single_router(std::shared_ptr<redis_connection> conn) : conn_(std::move(conn)) {}
    boost::asio::awaitable<command_result> execute(std::string_view,
                                                   std::span<const std::string_view> args) override
    {
        return conn_->execute(args);
    }
    void shutdown() override { conn_->shutdown(); }

private:
    std::shared_ptr<redis_connection> conn_;
};

} // namespace idemgate::store::detail
