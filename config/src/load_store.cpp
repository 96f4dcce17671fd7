#include "loader.hpp"

#include <charconv>
#include <limits>
#include <string>
#include <utility>

namespace idemgate::config::detail {

void loader::load_store(const map_view& top, store_config& store)
{
    map_view map(
        *this, child(top, "store"), "store",
        {"type", "on_failure", "redis", "memory", "key_secret_env", "hash_keys", "encryption", "local_tier"});
    read_string(map, "key_secret_env", store.key_secret_env);
    if (!store.key_secret_env.empty()) {
        const char* value = getenv_(store.key_secret_env.c_str());
        if (!value)
            problem(map.path_of("key_secret_env"),
                    "environment variable " + quote(store.key_secret_env) + " is not set");
        else if (std::string_view(value).size() < 32)
            problem(map.path_of("key_secret_env"),
                    "environment variable " + quote(store.key_secret_env) + " must hold at least 32 bytes");
        else
            store.key_secret = value;
    }
    read_choice(map, "type", "a store type", {{"memory", store_type::memory}, {"redis", store_type::redis}},
                store.type);
    read_choice(map, "on_failure", "a failure mode",
                {{"reject", failure_mode::reject}, {"pass_through", failure_mode::pass_through}},
                store.on_failure);
    read_bool(map, "hash_keys", store.hash_keys);
    if (store.hash_keys && store.key_secret_env.empty())
        problem(map.path_of("hash_keys"),
                "needs store.key_secret_env (keys are stored as HMACs under that secret)");
    load_encryption(map, store.encryption);
    load_redis(map, store.redis);

    map_view memory(*this, child(map, "memory"), "store.memory", {"max_entries", "max_bytes"});
    read_int(memory, "max_entries", store.memory.max_entries, 1, std::numeric_limits<std::size_t>::max());
    read_size(memory, "max_bytes", store.memory.max_bytes, false);
    load_local_tier(map, store.local_tier);
}

void loader::load_local_tier(const map_view& store, local_tier_config& tier)
{
    map_view map(*this, child(store, "local_tier"), "store.local_tier", {"max_bytes", "max_age", "admit"});
    read_size(map, "max_bytes", tier.max_bytes);
    read_duration(map, "max_age", tier.max_age);
    read_choice(map, "admit", "an admission policy",
                {{"replay", tier_admission::replay}, {"complete", tier_admission::complete}}, tier.admit);
}

void loader::load_encryption(const map_view& store, encryption_config& encryption)
{
    map_view map(*this, child(store, "encryption"), "store.encryption", {"key_env", "previous_key_env"});
    read_string(map, "key_env", encryption.key_env);
    read_string(map, "previous_key_env", encryption.previous_key_env);
    encryption.key = record_key(map, "key_env", encryption.key_env);
    encryption.previous_key = record_key(map, "previous_key_env", encryption.previous_key_env);
}

// The 32 raw bytes of an AES-256 key held as 64 hex digits in the variable `name` names; ""
// when `name` is empty or the variable is unusable (then a problem at `key`).
std::string loader::record_key(const map_view& map, std::string_view key, const std::string& name)
{
    if (name.empty())
        return {};
    const char* value = getenv_(name.c_str());
    if (!value || !*value) {
        problem(map.path_of(key), "environment variable " + quote(name) + " is not set");
        return {};
    }
    std::string_view hex(value);
    std::string bytes;
    for (std::size_t i = 0; hex.size() == 64 && i < hex.size(); i += 2) {
        unsigned char byte = 0;
        auto [end, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, byte, 16);
        if (ec != std::errc{} || end != hex.data() + i + 2)
            break;
        bytes.push_back(static_cast<char>(byte));
    }
    if (bytes.size() != 32) {
        // The value is a secret: say what is wrong with it, never what it is.
        problem(map.path_of(key), "environment variable " + quote(name) +
                                      " must hold 64 hex digits (a 32-byte AES-256 key), it holds " +
                                      std::to_string(hex.size()) + " characters" +
                                      (hex.size() == 64 ? " that are not all hex digits" : ""));
        return {};
    }
    return bytes;
}

void loader::load_redis(const map_view& store, redis_config& redis)
{
    // `password` is not a key: secrets come from the environment, never from the file.
    map_view map(*this, child(store, "redis"), "store.redis",
                 {"mode", "address", "nodes", "topology_refresh", "password_env", "username", "db",
                  "key_prefix", "command_timeout", "connect_timeout", "reconnect_backoff_max",
                  "eviction_check_interval", "min_replicas_ack", "sentinel", "tls"});
    if (auto text = scalar(map, "mode", "a string")) {
        if (*text == "standalone")
            redis.mode = redis_mode::standalone;
        else if (*text == "cluster")
            redis.mode = redis_mode::cluster;
        else if (*text == "sentinel")
            redis.mode = redis_mode::sentinel;
        else
            problem(map.path_of("mode"),
                    quote(*text) + " is not a mode (use standalone, cluster or sentinel)");
    }
    read_endpoint(map, "address", redis.address);
    if (const auto* nodes = map.find("nodes")) {
        auto path = map.path_of("nodes");
        if (!nodes->IsSequence()) {
            problem(path, std::string("expected a list of host:port, got ") + kind_name(*nodes));
        } else {
            for (std::size_t i = 0; i < nodes->size(); ++i) {
                auto item_path = path + "[" + std::to_string(i) + "]";
                auto text = scalar((*nodes)[i], item_path, "an endpoint (host:port)");
                if (!text)
                    continue;
                auto checked = check_endpoint(*text);
                if (!checked.value)
                    problem(item_path, checked.problem);
                else
                    redis.nodes.push_back(std::move(*checked.value));
            }
        }
    }
    read_duration(map, "topology_refresh", redis.topology_refresh);
    read_int(map, "min_replicas_ack", redis.min_replicas_ack, 0, 100);
    if (redis.mode == redis_mode::cluster) {
        if (redis.nodes.empty())
            problem(map.path_of("nodes"), "cluster mode needs at least one seed node (host:port)");
        if (map.find("address"))
            problem(map.path_of("address"), "not used in cluster mode (list the seed nodes under nodes)");
    }
    if (redis.mode == redis_mode::sentinel) {
        if (redis.nodes.empty())
            problem(map.path_of("nodes"), "sentinel mode needs the sentinels (host:port each)");
        if (map.find("address"))
            problem(map.path_of("address"), "not used in sentinel mode (the sentinels name the primary)");
    }
    map_view sentinel(*this, child(map, "sentinel"), "store.redis.sentinel", {"master_name", "password_env"});
    read_string(sentinel, "master_name", redis.sentinel_master_name);
    if (redis.sentinel_master_name.empty())
        problem(sentinel.path_of("master_name"), "must not be empty");
    read_string(sentinel, "password_env", redis.sentinel_password_env);
    if (!redis.sentinel_password_env.empty()) {
        const char* value = getenv_(redis.sentinel_password_env.c_str());
        if (!value)
            problem(sentinel.path_of("password_env"),
                    "environment variable " + quote(redis.sentinel_password_env) + " is not set");
        else
            redis.sentinel_password = value;
    }
    read_int(map, "db", redis.db, 0, 15);
    if (redis.mode == redis_mode::cluster && redis.db != 0)
        problem(map.path_of("db"), "Redis Cluster has only database 0");
    if (auto text = scalar(map, "key_prefix", "a string")) {
        bool has_space = false;
        for (char c : *text)
            has_space = has_space || c == ' ' || c == '\t' || c == '\n' || c == '\r';
        if (text->empty())
            problem(map.path_of("key_prefix"), "must not be empty");
        else if (has_space)
            problem(map.path_of("key_prefix"), quote(*text) + " must not contain whitespace");
        else
            redis.key_prefix = std::move(*text);
    }
    read_duration(map, "command_timeout", redis.command_timeout);
    read_duration(map, "connect_timeout", redis.connect_timeout);
    read_duration(map, "reconnect_backoff_max", redis.reconnect_backoff_max);
    read_duration(map, "eviction_check_interval", redis.eviction_check_interval, true);

    read_string(map, "password_env", redis.password_env);
    if (!redis.password_env.empty()) {
        const char* value = getenv_(redis.password_env.c_str());
        if (!value)
            problem(map.path_of("password_env"),
                    "environment variable " + quote(redis.password_env) + " is not set");
        else
            redis.password = value;
    }
    read_string(map, "username", redis.username);
    if (!redis.username.empty() && redis.password_env.empty())
        problem(map.path_of("username"),
                "needs store.redis.password_env (an ACL user logs in with AUTH username password)");
    // An error, not a warning, when TLS is off but a file is named: it says the operator expects
    // TLS, and the password would otherwise cross the network in clear.
    load_client_tls(map, "store.redis.tls", redis.tls, "plain TCP");
}

// Files are checked for readability here; that they hold PEM certificates and a matching key
// is checked where OpenSSL loads them (store::check_backend_config, run by --check too).

} // namespace idemgate::config::detail
