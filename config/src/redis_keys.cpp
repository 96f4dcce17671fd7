// SPDX-License-Identifier: Apache-2.0
// The store.redis section (the Redis backend's own settings), keys.hpp.
#include "keys.hpp"

#include <string>

namespace idemgate::config::detail {

namespace {

using r = redis_config;

// `password` is not a key: secrets come from the environment, never from the file.
void resolve_password(loader& l, const map_view& map, std::string_view key, const std::string& name,
                      std::string& out)
{
    if (name.empty())
        return;
    if (const char* value = l.env(name))
        out = value;
    else
        l.problem(map.path_of(key), "environment variable " + quote(name) + " is not set");
}

std::string key_prefix_problem(std::string_view text)
{
    if (text.empty())
        return "must not be empty";
    if (text.find_first_of(" \t\n\r") != std::string_view::npos)
        return quote(text) + " must not contain whitespace";
    return {};
}

// Which of address and nodes a mode reads.
void check_mode(loader& l, const map_view& map, r& redis)
{
    if (redis.mode == redis_mode::cluster) {
        if (redis.nodes.empty())
            l.problem(map.path_of("nodes"), "cluster mode needs at least one seed node (host:port)");
        if (map.find("address"))
            l.problem(map.path_of("address"), "not used in cluster mode (list the seed nodes under nodes)");
    }
    if (redis.mode == redis_mode::sentinel) {
        if (redis.nodes.empty())
            l.problem(map.path_of("nodes"), "sentinel mode needs the sentinels (host:port each)");
        if (map.find("address"))
            l.problem(map.path_of("address"), "not used in sentinel mode (the sentinels name the primary)");
    }
}

void check_consistency(loader& l, const map_view& map, r& redis)
{
    if (redis.consistency == redis_consistency::strict && redis.mode == redis_mode::cluster)
        l.problem(map.path_of("consistency"),
                  "strict is not available in cluster mode yet (use standalone or sentinel)");
    if (redis.consistency == redis_consistency::strict && redis.min_replicas_ack == 0)
        l.problem(map.path_of("consistency"),
                  "strict needs min_replicas_ack of 1 or more (the replicas each reservation must reach)");
}

const section<r>& sentinel_keys()
{
    static const section<r> keys{
        {"master_name", &r::sentinel_master_name, a_string{.problem = must_not_be_empty}},
        {"password_env",
         &r::sentinel_password_env,
         a_string{},
         {.then =
              [](loader& l, const map_view& map, r& redis) {
                  resolve_password(l, map, "password_env", redis.sentinel_password_env,
                                   redis.sentinel_password);
              }}},
    };
    return keys;
}

} // namespace

const section<r>& redis_keys()
{
    // An error, not a warning, when TLS is off but a file is named: it says the operator expects
    // TLS, and the password would otherwise cross the network in clear.
    static const auto tls_keys = client_tls_section("plain TCP");
    static const section<r> keys{
        {"mode", &r::mode, a_choice{"a mode"}},
        {"address", &r::address, an_endpoint{}}, // standalone
        {"nodes", &r::nodes, a_list{&loader::load_endpoint_list}, {.then = check_mode}},
        {"sentinel", whole, nested{sentinel_keys()}},
        {"topology_refresh", &r::topology_refresh, a_duration{}},
        {"password_env",
         &r::password_env,
         a_string{},
         {.then =
              [](loader& l, const map_view& map, r& redis) {
                  resolve_password(l, map, "password_env", redis.password_env, redis.password);
              }}},
        {"username",
         &r::username,
         a_string{},
         {.then =
              [](loader& l, const map_view& map, r& redis) {
                  if (!redis.username.empty() && redis.password_env.empty())
                      l.problem(map.path_of("username"),
                                "needs store.redis.password_env (an ACL user logs in "
                                "with AUTH username password)");
              }}},
        {"db",
         &r::db,
         an_int{0, 15},
         {.then =
              [](loader& l, const map_view& map, r& redis) {
                  if (redis.mode == redis_mode::cluster && redis.db != 0)
                      l.problem(map.path_of("db"), "Redis Cluster has only database 0");
              }}},
        {"key_prefix", &r::key_prefix, a_string{.problem = key_prefix_problem}},
        {"command_timeout", &r::command_timeout, a_duration{}},
        {"connect_timeout", &r::connect_timeout, a_duration{}},
        {"reconnect_backoff_max", &r::reconnect_backoff_max, a_duration{}},
        {"eviction_check_interval", &r::eviction_check_interval, a_duration{.zero = true}},
        {"allow_eviction", &r::allow_eviction, a_bool{}},
        {"min_replicas_ack", &r::min_replicas_ack, an_int{0, 100}},
        {"consistency", &r::consistency, a_choice{"a consistency"}, {.then = check_consistency}},
        {"wait_timeout",
         &r::wait_timeout,
         a_duration{},
         {.then =
              [](loader& l, const map_view& map, r& redis) {
                  if (redis.consistency == redis_consistency::strict &&
                      redis.wait_timeout >= redis.command_timeout)
                      l.problem(map.path_of("wait_timeout"),
                                "must be less than command_timeout (WAIT answers within it)");
              }}},
        {"tls", &r::tls, nested{tls_keys}},
    };
    return keys;
}

} // namespace idemgate::config::detail
