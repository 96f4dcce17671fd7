// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store: one pipelined connection per I/O thread (session), hiredis' reply parser,
// Asio for the socket.
//
// Keys are <prefix>:<escaped tenant>:<escaped key> (redis_key), or for a hashed scope (store.hash_keys,
// applied by the protection decorator, protected_backend.hpp) <prefix>:{<hex HMAC>}
// (hashed_redis_key). Operations, one round trip each:
//   reserve:  SET key <in-flight record> NX PX lock_ttl GET
//   complete: EVALSHA (owner-checked SET ... PX record_ttl)
//   release:  EVALSHA (owner-checked DEL)
// (complete and release also PUBLISH on the key's channel with redis_options::publish_settled;
// SPUBLISH, sharded pub/sub, in cluster mode)
// Tenant quotas use <prefix>:q:{<tenant>}:f (with hash_keys the tenant is its hex HMAC tag) (a sorted set of
// in-flight owner tokens scored by lock expiry) and <prefix>:q:{<tenant>}:r (the token bucket), one hash tag
// per tenant:
//   admit:    EVALSHA (prune, count, refill, take, add) on both
//   leave:    ZREM
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <idemgate/common/histogram.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace idemgate::store {

// Counters for /metrics; all monotonic except connections_up. Relaxed atomics.
struct redis_stats {
    // Commands written to Redis, and replies handed to a waiting command.
    std::atomic<std::uint64_t> commands_sent{0};
    std::atomic<std::uint64_t> replies{0};
    // Errors by kind. unavailable: failed fast (not connected, queue full, connection lost);
    // timeout: no reply within command_timeout, outcome unknown; reply: error replies (OOM,
    // READONLY, WRONGTYPE...); protocol: unexpected reply type or unparsable bytes; corrupt: a
    // stored record did not decode.
    std::atomic<std::uint64_t> errors_unavailable{0};
    std::atomic<std::uint64_t> errors_timeout{0};
    std::atomic<std::uint64_t> errors_reply{0};
    std::atomic<std::uint64_t> errors_protocol{0};
    std::atomic<std::uint64_t> errors_corrupt{0};
    // NOSCRIPT answers: a node without the script (just started, flushed, newly promoted, a
    // redirect's target). Expected, so not an error: the script is sent again (EVAL) at once.
    std::atomic<std::uint64_t> script_loads{0};
    // Connections established (handshake done), connect attempts after each session's first,
    // and sessions whose connection is up now.
    std::atomic<std::uint64_t> connects{0};
    std::atomic<std::uint64_t> reconnect_attempts{0};
    std::atomic<std::int64_t> connections_up{0};
    // Whether Redis may evict records, from CONFIG GET maxmemory-policy (read on every (re)connect
    // and every redis_options::eviction_check_interval): 1 noeviction; 0 any other policy (every
    // record has a TTL, so volatile-* evicts them too); -1 unknown: not read yet, or CONFIG refused
    // (renamed or disabled on managed Redis), which is tolerated with a warning.
    std::atomic<int> eviction_safe{-1};
    // Whether a restart keeps the records, from CONFIG GET save and appendonly (read with the
    // policy): 1 RDB save points or AOF on; 0 neither (a restart empties Redis); -1 unknown.
    std::atomic<int> persistence{-1};
    // Error replies to writes (reserve, complete) by kind, each counted towards the refusing state
    // (refusal_kind order: NOPERM, READONLY, OOM, NOSCRIPT, other).
    std::array<std::atomic<std::uint64_t>, 5> refusals{};
    // Times the marker key (<key_prefix>:marker) was found gone or replaced: Redis lost its data
    // (a restart without persistence, a flush, an eviction).
    std::atomic<std::uint64_t> emptied{0};
    // Redis Cluster: redirects followed (MOVED, ASK), commands given up after max redirects,
    // slot map reads (and failed ones), slots served and primaries in the last map.
    std::atomic<std::uint64_t> cluster_moved{0};
    std::atomic<std::uint64_t> cluster_ask{0};
    std::atomic<std::uint64_t> cluster_redirect_loops{0};
    std::atomic<std::uint64_t> cluster_refreshes{0};
    std::atomic<std::uint64_t> cluster_refresh_failures{0};
    std::atomic<std::int64_t> cluster_slots_covered{0};
    std::atomic<std::int64_t> cluster_primaries{0};
    // Completed records that fewer than min_replicas_ack replicas acknowledged (WAIT).
    std::atomic<std::uint64_t> records_unreplicated{0};
    // Sentinel mode: times the sentinels named a primary other than the one before; each closes
    // every data connection to the old address.
    std::atomic<std::uint64_t> primary_switches{0};
    // consistency strict: reservations released and refused because fewer than min_replicas_ack
    // replicas acknowledged them (or fewer were connected), so the upstream never ran.
    std::atomic<std::uint64_t> reservations_unreplicated{0};
    // consistency strict: completed records the primary did not take or the replicas did not
    // acknowledge, written again to the current primary: acknowledged at last, written again but
    // not acknowledged yet (each attempt), dropped (another owner's lock or record holds the key,
    // the record expired, or the gateway stopped first); and how many wait now.
    std::atomic<std::uint64_t> completes_resent_acked{0};
    std::atomic<std::uint64_t> completes_resent_again{0};
    std::atomic<std::uint64_t> completes_resent_dropped{0};
    std::atomic<std::int64_t> completes_pending{0};
    // Replicas the primary reported connected at its last ROLE (every second); -1 unknown.
    std::atomic<std::int64_t> connected_replicas{-1};
    // Latency of answered commands (enqueue to reply).
    latency_histogram latency;

    // Redis Cluster: the primaries of the last slot map (bounded by the cluster's size), for the
    // per-node gauges. Written by the topology refresher, read by /metrics.
    struct cluster_node {
        std::string node; // host:port
        std::size_t slots = 0;
        bool online = false;    // as CLUSTER SHARDS says
        bool connected = false; // the refresher's connection to it is up
    };
    void set_cluster_nodes(std::vector<cluster_node> nodes);
    std::vector<cluster_node> cluster_nodes() const;

private:
    mutable std::mutex cluster_nodes_mutex_;
    std::vector<cluster_node> cluster_nodes_;
};

// Store options not (yet) in config::redis_config.
struct redis_options {
    // How often each connection re-reads maxmemory-policy, besides on every (re)connect; zero
    // checks on (re)connect only. One CONFIG GET per connection per period, off the request path.
    std::chrono::milliseconds eviction_check_interval{30000};
    // Error replies (OOM, READONLY, NOPERM, MOVED...) are logged with their text: the first at
    // once, then at most one line per interval per backend, which counts those not logged.
    std::chrono::milliseconds error_log_interval{1000};
    // Wait mode: complete and release PUBLISH on the record key's channel, and the backend
    // keeps one subscriber connection for the keys its waiters wait for. In cluster mode they
    // SPUBLISH instead, and the backend SSUBSCRIBEs each waited-for key on the primary serving
    // its slot (one subscriber connection per primary with waiters). Off, nothing is published
    // (an ACL user then needs no channel permission).
    bool publish_settled = false;
    // The gateway's local tier (store.local_tier): remove() PUBLISHes the record's key on
    // `<key_prefix>:removed`, and the subscriber connection (the same one as wait mode's; in
    // cluster mode one classic subscriber connection to any node, as PUBLISH reaches every node)
    // SUBSCRIBEs to it and reports every removal, by any gateway, to backend::on_removed.
    bool publish_removals = false;
    // The protection decorator (store.hash_keys or store.encryption, protected_backend.hpp) wraps
    // this backend: a sealed (version 2) record is handed up with its response part sealed
    // (record::sealed_response) for the decorator to open. Off, no key here opens one: a sealed
    // record is record_corrupt.
    bool keep_sealed = false;
    // The health monitor (the gateway turns it on): after each (re)connect, and every
    // health_interval while the store refuses writes or a command, one run of each command the
    // store needs on <key_prefix>:probe; and the marker key <key_prefix>:marker, written once and
    // read every health_interval, whose loss says Redis lost its data. Off, neither key is
    // written and error replies never put the store in the refusing state (nothing would end it).
    bool health_checks = false;
    std::chrono::milliseconds health_interval{1000};
};

// The Redis backend; open_session() connects (and keeps reconnecting) in the background.
class redis_backend : public backend {
public:
    // Counters shared by all sessions of this backend.
    virtual const redis_stats& stats() const noexcept = 0;
};

std::shared_ptr<redis_backend> make_redis_backend(const config::redis_config& cfg,
                                                  const redis_options& options = {});

// The Redis key of a scope: <prefix>:<tenant>:<key>, tenant and key percent-encoded
// (':' '%' and bytes outside printable ASCII), so no two scopes share a key.
std::string redis_key(std::string_view prefix, scope s);

// The Redis key of a scope with store.hash_keys: <prefix>:{<lower-case hex HMAC-SHA256(secret,
// tenant \0 key)>} (the key of the hashed scope the protection decorator hands down). Neither the key nor the
// tenant can be read from it; the braces are a Redis Cluster hash tag (the slot is computed over the hex
// only).
std::string hashed_redis_key(std::string_view prefix, scope s, std::string_view secret);

// A tenant as it may appear inside a Redis key (e.g. per-tenant keys): percent-encoded as in
// redis_key when `secret` is empty, else the lower-case hex HMAC-SHA256(secret, tenant) (never
// equal to a record's hash: tenants hold no NUL byte).
std::string redis_tenant_tag(std::string_view tenant, std::string_view secret);
// The two keys of a tenant's quota: {in-flight set, token bucket}, under the hash tag
// {<tenant, percent-encoded>} or, with a secret (store.hash_keys), {<hex HMAC of the tenant>}.
std::array<std::string, 2> redis_quota_keys(std::string_view prefix, std::string_view tenant,
                                            std::string_view secret = {});

} // namespace idemgate::store
