// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency store interface: reserve / complete / release with owner tokens.
//
// A backend (memory, redis) is created once per process; each I/O thread opens its own
// session on its own executor, so a session is only ever used from one thread and Redis
// commands from every request on that thread share (pipeline on) one connection.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/describe/enum.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <idemgate/common/enum_count.hpp>
#include <idemgate/store/shadow_report.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::store {

using duration = std::chrono::milliseconds;

struct header_field {
    std::string name;
    std::string value;
    friend bool operator==(const header_field&, const header_field&) = default;
};

// A finished upstream answer, kept for replay: status, reason, end-to-end headers, body.
struct stored_response {
    unsigned status = 0;
    std::string reason;
    std::vector<header_field> headers;
    std::string body;
    friend bool operator==(const stored_response&, const stored_response&) = default;
};

// outcome_unknown: the request was sent upstream and no answer came (on_unknown_outcome: hold);
// like in_flight it has no response, but it lives for record_ttl and is never executed again.
// status_only: the upstream answered with a body too big to record (limits.max_record_body);
// the record keeps the status, reason and fields, the body's length and SHA-256, no body, and a
// retry is refused (never executed) for record_ttl.
// tombstone: what outlives an expired record for tombstone_ttl (session::bury): the
// fingerprint, created time, status, Location (as its one field) and body SHA-256.
enum class record_state : std::uint8_t {
    in_flight = 1,
    completed = 2,
    outcome_unknown = 3,
    status_only = 4,
    tombstone = 5
};

// What a key holds. An in-flight record has no response.
struct record {
    record_state state = record_state::in_flight;
    std::string fingerprint; // hex SHA-256 of method \n path-with-query \n body
    std::string owner_token; // unique per reservation; complete/release compare it
    std::int64_t created_unix_ms = 0;
    stored_response response; // completed; status_only and tombstone: without a body
    // status_only and tombstone: the answer body's length and lower-case hex SHA-256 ("" when
    // the body was not read to its end).
    std::uint64_t body_length = 0;
    std::string body_sha256;
    // store.encryption: the response part (response, body_length, body_sha256) sealed by the
    // protection decorator (protected_backend.hpp; record_cipher's form: key id | nonce |
    // ciphertext | tag), which leaves those fields empty. A backend keeps these bytes as they are
    // and hands them back; the record codec writes such a record as version 2. Empty: clear.
    std::string sealed_response;
    friend bool operator==(const record&, const record&) = default;
};

// The number of executions of a key (session::count_execution).
struct count_result {
    boost::system::error_code ec;
    std::uint64_t count = 0;
};

// What outlives a key's record (session::find_tombstone).
struct tombstone_result {
    boost::system::error_code ec;
    std::optional<record> tombstone; // state tombstone; nullopt: none
};

// Held keys' probes claimed for sending (session::claim_probes).
struct probe_claim {
    boost::system::error_code ec;
    std::vector<std::string> entries;
};

// Where a key lives: the tenant scope plus the client's key. Two scopes never collide.
//
// With store.hash_keys the protection decorator (protected_backend.hpp) hands the backend a
// hashed scope instead: `hashed` set, `tenant` empty and `key` the lower-case hex
// HMAC-SHA256(store.key_secret, tenant \0 key). The backend names the record by that digest
// alone (Redis: <prefix>:{<digest>}) and never sees the raw tenant or key; with hash_keys every
// scope it sees is hashed, so a hashed and a raw scope never meet in one store.
struct scope {
    std::string_view tenant; // "" = the default scope
    std::string_view key;
    bool hashed = false;
};

struct reserve_result {
    boost::system::error_code ec;   // set: the store failed, nothing is known about the key
    bool acquired = false;          // true: the caller owns the key until lock_ttl
    std::optional<record> existing; // !acquired: what the key holds now
    // Redis consistency strict: the key was free, but the reservation did not reach enough
    // replicas and was released again; the request must not be forwarded (nor pass through).
    bool unreplicated = false;
};

// What an operator sees of one key (admin API).
struct lookup_result {
    boost::system::error_code ec;   // set: the store failed
    std::optional<record> existing; // nullopt: no record (never made, expired or removed)
    std::int64_t expires_in_ms = 0; // time to live left, when `existing`
};

// A tenant's limits (config tenants:); 0 = unlimited.
struct tenant_limits {
    std::uint64_t max_in_flight = 0;
    double new_keys_per_second = 0; // token bucket; burst = max(1, rate)
};

enum class admission {
    admitted,
    too_many_in_flight, // max_in_flight reservations are in flight already
    rate_exceeded       // the token bucket is empty
};

struct admit_result {
    boost::system::error_code ec; // set: the store failed, nothing was counted
    admission verdict = admission::admitted;
    duration retry_after{0}; // when refused: when a retry may be admitted
};

// After wait_settled: what the key holds once it is no longer in flight, or at the deadline.
struct wait_result {
    boost::system::error_code ec;   // set: the store failed
    std::optional<record> existing; // nullopt: released (or expired); else completed / held / in flight
    bool timed_out = false;         // the deadline passed with the key still in flight
};

// What a backend offers beyond the core operations, one bit each. A route or tenant that asks
// for one (check_store_capabilities, backend_factory.hpp) is refused by the configuration check
// when the configured backend lacks it, so a session is never asked for what it has not.
enum class capability : unsigned {
    wait = 1u << 0,          // settle_wait: routes[].idempotency.on_in_flight wait
    tombstones = 1u << 1,    // tombstone_keeper: routes[].idempotency.tombstone_ttl > 0
    attempts = 1u << 2,      // attempt_counter: routes[].idempotency.attempt_header
    probes = 1u << 3,        // probe_schedule: routes[].idempotency.reconcile
    quotas = 1u << 4,        // quota_keeper: tenants with max_in_flight or new_keys_per_second
    shadow_report = 1u << 5, // shadow_tally: routes[].idempotency.mode shadow
    held = 1u << 6,          // held_index: routes that hold keys (on_unknown_outcome or on_status hold)
};
// Its names and number: a new capability goes in both lists (its bit the next one).
BOOST_DESCRIBE_ENUM(capability, wait, tombstones, attempts, probes, quotas, shadow_report, held)
inline constexpr std::size_t capability_count = enum_count<capability>;
// Every capability's bit, for a backend that offers them all.
inline constexpr unsigned all_capabilities = (1u << capability_count) - 1;

// Wait mode. Waits until the key no longer holds an in-flight record (completed, released,
// held, expired), at most `timeout`, and reports what it holds then. Woken by a notification
// from whichever gateway completes or releases the key (backend option publish_settled), not
// by polling.
class settle_wait {
public:
    virtual boost::asio::awaitable<wait_result> wait_settled(scope s, duration timeout) = 0;

protected:
    ~settle_wait() = default;
};

// Tombstones (routes[].idempotency.tombstone_ttl). Keeps `tombstone` (state tombstone) beside
// the key's record for `ttl` (record_ttl + tombstone_ttl), so it outlives the record; and
// reads it back.
class tombstone_keeper {
public:
    virtual boost::asio::awaitable<boost::system::error_code> bury(scope s, const record& tombstone,
                                                                   duration ttl) = 0;
    virtual boost::asio::awaitable<tombstone_result> find_tombstone(scope s) = 0;

protected:
    ~tombstone_keeper() = default;
};

// Attempts (routes[].idempotency.attempt_header). Counts one more execution of the key and
// returns the count (1 for its first); the count is kept `ttl` after the latest execution
// (lock_ttl + record_ttl: as long as a release could be followed by another execution that
// a client would see as a retry).
class attempt_counter {
public:
    virtual boost::asio::awaitable<count_result> count_execution(scope s, duration ttl) = 0;

protected:
    ~attempt_counter() = default;
};

// Reconciliation (routes[].idempotency.reconcile): a schedule of held keys' probes, shared by
// every gateway on the store, so none has to scan the keys for held ones. An entry is the
// gateway's own description of a probe (opaque here), due at a Unix time in milliseconds.
class probe_schedule {
public:
    // Adds the entry, or moves it, to be due at due_unix_ms.
    virtual boost::asio::awaitable<boost::system::error_code> schedule_probe(std::string_view entry,
                                                                             std::int64_t due_unix_ms) = 0;
    // Claims up to `limit` entries due at now_unix_ms, each for one gateway only: a claimed entry
    // is due again at now_unix_ms + lease (it comes back if the claimant never reschedules it).
    virtual boost::asio::awaitable<probe_claim> claim_probes(std::int64_t now_unix_ms, duration lease,
                                                             std::size_t limit) = 0;
    // Takes the entry off the schedule (the key was resolved, or given up).
    virtual boost::asio::awaitable<boost::system::error_code> unschedule_probe(std::string_view entry) = 0;

protected:
    ~probe_schedule() = default;
};

// Tenant quotas (tenants:). With store.hash_keys `tenant` is the tenant's tag, the lower-case hex
// HMAC-SHA256(store.key_secret, tenant), from the protection decorator: used verbatim. Counts a new
// reservation (owner_token, in flight until lock_ttl at most) against the tenant's limits, atomically across
// every gateway sharing the store, in one round trip. A refused reservation is not counted.
class quota_keeper {
public:
    virtual boost::asio::awaitable<admit_result> admit(std::string_view tenant, std::string_view owner_token,
                                                       const tenant_limits& limits, duration lock_ttl) = 0;
    // The reservation admitted under owner_token is over (completed, released or held).
    virtual boost::asio::awaitable<boost::system::error_code> leave(std::string_view tenant,
                                                                    std::string_view owner_token) = 0;

protected:
    ~quota_keeper() = default;
};

// Held keys (session::held): held_index.hpp.
class held_index;

// One thread's handle on the store. Not thread-safe: use it from its executor only.
//
// The core every backend implements, and one accessor per capability: the session's part that
// offers it, or nullptr when the backend does not (its row in the backend table says which).
class session {
public:
    virtual ~session() = default;

    // Atomically: if the key is free, store `in_flight` with lock_ttl and report acquired;
    // otherwise report what the key holds. One round trip.
    virtual boost::asio::awaitable<reserve_result> reserve(scope s, const record& in_flight,
                                                           duration lock_ttl) = 0;

    // Store `completed` with record_ttl, only if the key still holds completed.owner_token.
    // error::not_owner if it does not (the lock expired and someone else took the key).
    virtual boost::asio::awaitable<boost::system::error_code> complete(scope s, const record& completed,
                                                                       duration record_ttl) = 0;

    // Delete the key, only if it still holds owner_token (error::not_owner otherwise).
    virtual boost::asio::awaitable<boost::system::error_code> release(scope s,
                                                                      std::string_view owner_token) = 0;

    // The key still holds the in-flight record of owner_token: its lock_ttl starts again (an
    // answer passed on to the client for longer than lock_ttl). error::not_owner otherwise; a
    // completed record is never touched. Core, not a capability: whether an answer outlasts
    // lock_ttl depends on the upstream's answer, not on a setting a check could match.
    virtual boost::asio::awaitable<boost::system::error_code> extend(scope s, std::string_view owner_token,
                                                                     duration lock_ttl) = 0;

    // Operator access (admin API), and a client's lookup of its own key (lookup only).
    // The record a key holds and its remaining TTL.
    virtual boost::asio::awaitable<lookup_result> lookup(scope s) = 0;
    // Deletes the key whatever it holds (no owner check: an operator's decision). Sets `removed`.
    virtual boost::asio::awaitable<boost::system::error_code> remove(scope s, bool& removed) = 0;

    // The capabilities: the part of this session that offers one, nullptr when it does not.
    virtual settle_wait* waits() noexcept { return nullptr; }
    virtual tombstone_keeper* tombstones() noexcept { return nullptr; }
    virtual attempt_counter* attempts() noexcept { return nullptr; }
    virtual probe_schedule* probes() noexcept { return nullptr; }
    virtual quota_keeper* quotas() noexcept { return nullptr; }
    virtual shadow_tally* shadows() noexcept { return nullptr; }
    virtual held_index* held() noexcept { return nullptr; }
};

// What keeps a store from serving besides being unreachable (backend::ready), one bit each:
// every one makes the gateway not ready (readiness.store: required).
enum class store_condition : unsigned {
    refusing = 1u << 0,        // error replies to writes: new keys are refused until a probe write succeeds
    evicting = 1u << 1,        // Redis may evict records (maxmemory-policy) and allow_eviction is off
    full = 1u << 2,            // no room for a new key (the memory store at its bounds)
    command_refused = 1u << 3, // a command the store needs was refused by its check (an ACL)
};
// Its names and number, for the labels and gauges of each bit: a new condition goes in both lists
// (its bit the next one; session.cpp checks the bits).
BOOST_DESCRIBE_ENUM(store_condition, refusing, evicting, full, command_refused)
inline constexpr std::size_t store_condition_count = enum_count<store_condition>;
// The condition of bit `index` as a word ("refusing", "evicting", "full", "command_refused").
std::string_view store_condition_name(std::size_t index) noexcept;

// How many error replies to writes within `window` put a store in the refusing state.
struct refusal_policy {
    std::uint32_t errors = 5;
    duration window{10000};
};

// The longest Retry-After a full store answers, whatever its oldest record's expiry.
inline constexpr duration full_retry_cap{60000};

// What a store says for /readyz and the logs.
struct store_status {
    unsigned conditions = 0;          // store_condition bits
    std::vector<std::string> reasons; // one line per condition set, saying why
    std::vector<std::string> notes;   // not conditions: warnings and recent events (an emptied Redis)
};

// The process-wide store.
class backend {
public:
    virtual ~backend() = default;

    // Opens a session bound to `ex` (one per I/O thread).
    virtual std::unique_ptr<session> open_session(boost::asio::any_io_executor ex) = 0;

    // False while the store cannot serve (e.g. Redis unreachable); drives /readyz.
    virtual bool ready() const = 0;

    // Human-readable kind for logs and metrics ("memory", "redis").
    virtual std::string_view kind() const noexcept = 0;

    // The store's conditions and notes (not reachability: ready()). Thread-safe; the default has none.
    virtual store_status status() const;
    // Read per request: the store refuses writes (or its check found a command refused), so a
    // new key must not be forwarded. Thread-safe, one load.
    bool refusing() const noexcept { return refusing_->load(std::memory_order_relaxed); }
    // store.refusal; reloadable. The default ignores it (a store that never refuses).
    virtual void set_refusal_policy(const refusal_policy& policy);
    // A full store (error::store_full): how long until room is likely, from its oldest record's
    // expiry, between 1 s and full_retry_cap. The default says 1 s.
    virtual duration full_retry_after() const;

    // A record's identity in this store, the same in every process sharing it (the Redis key).
    // The gateway's local tier is keyed by it.
    virtual std::string record_id(scope s) const;

    // A record this backend handed up did not open in the protection decorator above it
    // (store.encryption: sealed under a key that is neither the current nor the previous one, or
    // altered); `bytes` is its stored size, `why` the reason. The lookup answered
    // error::record_corrupt; the backend counts and logs it with its own corrupt records.
    // Thread-safe; the default logs it.
    virtual void record_unreadable(std::string_view record_id, std::size_t bytes, std::string_view why) const;

    // Appends this backend's own series to the gateway's /metrics, as Prometheus text (e.g.
    // idemgate_redis_*, idemgate_memory_store_*). Thread-safe; the default appends nothing.
    virtual void render_metrics(std::string& out) const;

    // Called with the record_id of every record an operator removes (session::remove), in this
    // process or — Redis, with redis_options::publish_removals — any other gateway sharing the
    // store. Called on a store thread; must be thread-safe. Set before the first open_session().
    void on_removed(std::function<void(std::string_view record_id)> listener)
    {
        removal_listener_ = std::move(listener);
    }

protected:
    backend() = default;
    // A backend standing for another (a decorator): refusing() reads `refusing`, the other's flag
    // (refusal_flag).
    explicit backend(std::shared_ptr<std::atomic<bool>> refusing) : refusing_(std::move(refusing)) {}
    static std::shared_ptr<std::atomic<bool>> refusal_flag(const backend& b) { return b.refusing_; }

    // Set by the backend's health tracking (which may outlive the backend, hence shared).
    const std::shared_ptr<std::atomic<bool>> refusing_ = std::make_shared<std::atomic<bool>>(false);

    void removed(std::string_view record_id) const
    {
        if (removal_listener_)
            removal_listener_(record_id);
    }

private:
    std::function<void(std::string_view)> removal_listener_;
};

} // namespace idemgate::store
