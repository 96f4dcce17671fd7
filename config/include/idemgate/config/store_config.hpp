// SPDX-License-Identifier: Apache-2.0
#pragma once
// The store's part of the configuration (store.*), and the small values every section shares:
// durations, endpoints and client-side TLS. Included by config.hpp; every default documented
// here is the value used when the key is absent.
#include <boost/describe/enum.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace idemgate::config {

using duration = std::chrono::milliseconds;

// host:port. Port 0 means "any free port" (tests); the bound port is logged at start-up.
struct endpoint {
    std::string host;
    std::uint16_t port = 0;
    std::string to_string() const { return host + ":" + std::to_string(port); }
};

// map: the test-only backend (store/src/map/). The store library has it only in the tests'
// builds (IDEMGATE_TEST_BACKEND); anywhere else its check refuses store.type: map.
BOOST_DEFINE_ENUM_CLASS(store_type, memory, redis, map);
BOOST_DEFINE_ENUM_CLASS(failure_mode, reject, pass_through);

// TLS from the gateway as a client: to Redis (store.redis.tls, managed Redis) and to an
// upstream (upstreams.<name>.tls). Off by default; every other key needs
// `enabled: true`.
struct client_tls_config {
    bool enabled = false;
    std::string ca_file;     // PEM CA bundle the server is verified against ("" = system store)
    std::string cert_file;   // client certificate chain (PEM) for mutual TLS; needs key_file
    std::string key_file;    // its private key (PEM); needs cert_file
    std::string server_name; // SNI and the name verified ("" = the host connected to)
    bool verify = true;      // false: no certificate or name check (testing only; warned)
};
using redis_tls_config = client_tls_config;
using upstream_tls_config = client_tls_config;
BOOST_DEFINE_ENUM_CLASS(redis_mode, standalone, cluster, sentinel);

// What a reservation must reach before the upstream runs. async: the primary only (Redis
// replicates afterwards); strict: also min_replicas_ack replicas (WAIT), or the request is
// refused with 503 and the reservation released.
BOOST_DEFINE_ENUM_CLASS(redis_consistency, async, strict);

struct redis_config {
    redis_mode mode = redis_mode::standalone;
    endpoint address{"127.0.0.1", 6379}; // standalone
    std::vector<endpoint> nodes;         // cluster: seed nodes; sentinel: the sentinels
    std::string sentinel_master_name = "mymaster";
    std::string sentinel_password_env;   // for the sentinels, if they require AUTH
    std::string sentinel_password;       // resolved from sentinel_password_env
    duration topology_refresh{2000};     // cluster: re-read the slot map this often (and on redirects)
    std::string password_env;            // name of the env var holding the password ("" = no AUTH)
    std::string password;                // resolved from password_env at load time, never from YAML
    std::string username;                // ACL user: AUTH username password ("" = AUTH password)
    int db = 0;                          // SELECT db
    std::string key_prefix = "idemgate"; // keys are <prefix>:<tenant>:<key> (escaped) or hashed
    duration command_timeout{250};       // per command; a timeout means "outcome unknown"
    duration connect_timeout{1000};
    duration reconnect_backoff_max{2000};    // reconnect with exponential backoff up to this
    duration eviction_check_interval{30000}; // re-read maxmemory-policy; 0 = on (re)connect only
    // A maxmemory-policy other than noeviction is accepted (a warning) instead of keeping the
    // gateway not ready: an evicted record lets a duplicate run again.
    bool allow_eviction = false;
    unsigned min_replicas_ack = 0; // > 0: WAIT for that many replicas after each complete
    redis_consistency consistency = redis_consistency::async;
    duration wait_timeout{50}; // strict: how long WAIT waits for the replicas after a reservation
    redis_tls_config tls;
};

struct memory_config {
    std::size_t max_entries = 100000;          // bound on keys; expired entries are evicted first
    std::size_t max_bytes = 256 * 1024 * 1024; // bound on stored bytes (keys, records, bodies)
};

// The test-only map backend has no keys: its section is empty.
struct map_config {};

// The section of the backend store.type names: one alternative per store_type, in its order (the
// alternative's index is the type). A backend's keys are declared once, in its section's key
// table (config/src/store_keys.cpp, redis_keys.cpp).
using backend_config = std::variant<memory_config, redis_config, map_config>;

// The alternative of the backend `type`.
template<store_type type>
using backend_config_of = std::variant_alternative_t<static_cast<std::size_t>(type), backend_config>;

// Finished records kept in the gateway process (per I/O thread), so replays skip the store.
// When a finished record enters a thread's local tier: replay, when a replay reads it from the
// store (a key retried at least once; default); complete, also when this gateway completes it (a
// retry on the same thread skips the store).
BOOST_DEFINE_ENUM_CLASS(tier_admission, replay, complete);

struct local_tier_config {
    std::size_t max_bytes = 0; // all threads together; 0 = off
    duration max_age{10000};   // a copy never outlives this, nor its record's TTL
    tier_admission admit = tier_admission::replay;
};

// Records at rest: the response part of a completed record is AES-256-GCM encrypted.
struct encryption_config {
    std::string key_env;          // env var: 64 hex digits (32 bytes); new records ("" = written in clear)
    std::string previous_key_env; // env var: an older key, only decrypts (rotation; "" = none)
    std::string key;              // 32 raw bytes, resolved from key_env at load time, never from YAML
    std::string previous_key;     // 32 raw bytes, resolved from previous_key_env
    bool enabled() const noexcept { return !key.empty() || !previous_key.empty(); }
};

// When error replies to writes (reserve, complete) put the store in the refusing state: `errors`
// of them within `window`. While refusing, new keys are not forwarded and the gateway is not
// ready; a probe write that succeeds ends it. Reloadable, unlike the rest of store.
struct refusal_config {
    std::uint32_t errors = 5;
    duration window{10000};
};

struct store_config {
    // The chosen backend's section; which alternative it holds is store.type.
    backend_config backend;
    store_type type() const noexcept { return static_cast<store_type>(backend.index()); }
    // store.type: `chosen`'s section, at its defaults.
    void choose(store_type chosen)
    {
        [&]<std::size_t... I>(std::index_sequence<I...>)
        {
            ((static_cast<std::size_t>(chosen) == I ? void(backend.emplace<I>()) : void()), ...);
        }
        (std::make_index_sequence<std::variant_size_v<backend_config>>{});
    }
    // The section of a backend when store.type names it, else nullptr.
    template<class Section>
    const Section* section() const noexcept
    {
        return std::get_if<Section>(&backend);
    }
    const redis_config* redis() const noexcept { return section<redis_config>(); }
    const memory_config* memory() const noexcept { return section<memory_config>(); }

    // A section the file gives for a backend store.type does not name is checked like the chosen
    // one's and printed back by --print-config, and nothing else reads it: `unchosen` keeps it
    // for that. given<Section>() is the section as --print-config writes it: store.type's, else
    // the one the file gave, else the defaults.
    std::vector<backend_config> unchosen;
    template<class Section>
    const Section& given() const
    {
        if (const auto* chosen = section<Section>())
            return *chosen;
        for (const auto& other : unchosen)
            if (const auto* s = std::get_if<Section>(&other))
                return *s;
        static const Section defaults{};
        return defaults;
    }

    std::string key_secret_env; // env var with a secret (>= 32 bytes): credential scopes, hash_keys
    std::string key_secret;     // resolved from key_secret_env at load time, never from YAML
    // Redis keys are <prefix>:{hex HMAC-SHA256(key_secret, tenant \0 key)}: no raw key or tenant.
    bool hash_keys = false;
    encryption_config encryption;
    local_tier_config local_tier;
    failure_mode on_failure = failure_mode::reject;
    refusal_config refusal;
};

} // namespace idemgate::config
