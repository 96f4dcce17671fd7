// SPDX-License-Identifier: Apache-2.0
// The store.redis section (the Redis backend's own settings).
#include "loader.hpp"

#include <string>
#include <utility>

namespace idemgate::config::detail {

void loader::load_redis(const map_view& store, redis_config& redis)
{
    // `password` is not a key: secrets come from the environment, never from the file.
    map_view map(*this, child(store, "redis"), "store.redis",
                 {"mode", "address", "nodes", "topology_refresh", "password_env", "username", "db",
                  "key_prefix", "command_timeout", "connect_timeout", "reconnect_backoff_max",
                  "eviction_check_interval", "allow_eviction", "min_replicas_ack", "consistency",
                  "wait_timeout", "sentinel", "tls"});
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
    if (auto text = scalar(map, "consistency", "a string")) {
        if (*text == "async")
            redis.consistency = redis_consistency::async;
        else if (*text == "strict")
            redis.consistency = redis_consistency::strict;
        else
            problem(map.path_of("consistency"), quote(*text) + " is not a consistency (use async or strict)");
    }
    read_duration(map, "wait_timeout", redis.wait_timeout);
    if (redis.consistency == redis_consistency::strict && redis.mode == redis_mode::cluster)
        problem(map.path_of("consistency"),
                "strict is not available in cluster mode yet (use standalone or sentinel)");
    if (redis.consistency == redis_consistency::strict && redis.min_replicas_ack == 0)
        problem(map.path_of("consistency"),
                "strict needs min_replicas_ack of 1 or more (the replicas each reservation must reach)");
    if (map.find("wait_timeout") && redis.wait_timeout.count() <= 0)
        problem(map.path_of("wait_timeout"), "must be more than 0");
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
    if (redis.consistency == redis_consistency::strict && redis.wait_timeout >= redis.command_timeout)
        problem(map.path_of("wait_timeout"), "must be less than command_timeout (WAIT answers within it)");
    read_duration(map, "connect_timeout", redis.connect_timeout);
    read_duration(map, "reconnect_backoff_max", redis.reconnect_backoff_max);
    read_duration(map, "eviction_check_interval", redis.eviction_check_interval, true);
    read_bool(map, "allow_eviction", redis.allow_eviction);

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
