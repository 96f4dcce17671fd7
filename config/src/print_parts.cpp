// SPDX-License-Identifier: Apache-2.0
// The value spellings and the store block of --print-config (print_parts.hpp).
#include "print_parts.hpp"

#include <charconv>

namespace idemgate::config::print {

// The largest unit that divides exactly: 86400000 -> "1d", 1500 -> "1500ms".
std::string duration_text(duration d)
{
    auto ms = d.count();
    struct unit {
        long long ms;
        const char* name;
    };
    static constexpr unit units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}};
    if (ms == 0)
        return "0s";
    for (const auto& u : units)
        if (ms % u.ms == 0)
            return std::to_string(ms / u.ms) + u.name;
    return std::to_string(ms) + "ms";
}

std::string size_text(std::size_t n)
{
    struct unit {
        std::size_t bytes;
        const char* name;
    };
    static constexpr unit units[] = {{1ULL << 30, "GiB"}, {1ULL << 20, "MiB"}, {1ULL << 10, "KiB"}};
    if (n == 0)
        return "0";
    for (const auto& u : units)
        if (n % u.bytes == 0)
            return std::to_string(n / u.bytes) + u.name;
    return std::to_string(n) + "B";
}

// host:port, an IPv6 literal in brackets (as the loader reads it).
std::string endpoint_text(const endpoint& e)
{
    if (e.host.find(':') != std::string::npos)
        return "[" + e.host + "]:" + std::to_string(e.port);
    return e.to_string();
}

// The shortest fixed-point text that reads back as `v` (the loader takes no exponents).
std::string number_text(double v)
{
    char buf[400];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
    return ec == std::errc{} ? std::string(buf, end) : std::string("0");
}

void key(YAML::Emitter& out, const char* name)
{
    out << YAML::Key << name << YAML::Value;
}

void string_list(YAML::Emitter& out, const std::vector<std::string>& items)
{
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& i : items)
        out << i;
    out << YAML::EndSeq;
}

void client_tls(YAML::Emitter& out, const client_tls_config& t)
{
    key(out, "tls");
    out << YAML::BeginMap;
    key(out, "enabled");
    out << t.enabled;
    key(out, "ca_file");
    out << t.ca_file;
    key(out, "cert_file");
    out << t.cert_file;
    key(out, "key_file");
    out << t.key_file;
    key(out, "server_name");
    out << t.server_name;
    key(out, "verify");
    out << t.verify;
    out << YAML::EndMap;
}

void store(YAML::Emitter& out, const store_config& s)
{
    key(out, "store");
    out << YAML::BeginMap;
    key(out, "type");
    out << (s.type == store_type::redis ? "redis" : "memory");
    key(out, "key_secret_env");
    out << s.key_secret_env;
    key(out, "hash_keys");
    out << s.hash_keys;
    key(out, "encryption");
    out << YAML::BeginMap;
    key(out, "key_env");
    out << s.encryption.key_env;
    key(out, "previous_key_env");
    out << s.encryption.previous_key_env;
    out << YAML::EndMap;
    key(out, "on_failure");
    out << (s.on_failure == failure_mode::reject ? "reject" : "pass_through");
    const auto& r = s.redis;
    key(out, "redis");
    out << YAML::BeginMap;
    key(out, "mode");
    out << (r.mode == redis_mode::standalone ? "standalone"
            : r.mode == redis_mode::cluster  ? "cluster"
                                             : "sentinel");
    key(out, "address");
    out << endpoint_text(r.address);
    key(out, "nodes");
    out << YAML::Flow << YAML::BeginSeq;
    for (const auto& n : r.nodes)
        out << endpoint_text(n);
    out << YAML::EndSeq;
    key(out, "sentinel");
    out << YAML::BeginMap;
    key(out, "master_name");
    out << r.sentinel_master_name;
    key(out, "password_env");
    out << r.sentinel_password_env;
    out << YAML::EndMap;
    key(out, "topology_refresh");
    out << duration_text(r.topology_refresh);
    key(out, "password_env");
    out << r.password_env;
    key(out, "username");
    out << r.username;
    key(out, "db");
    out << r.db;
    key(out, "key_prefix");
    out << r.key_prefix;
    key(out, "command_timeout");
    out << duration_text(r.command_timeout);
    key(out, "connect_timeout");
    out << duration_text(r.connect_timeout);
    key(out, "reconnect_backoff_max");
    out << duration_text(r.reconnect_backoff_max);
    key(out, "eviction_check_interval");
    out << duration_text(r.eviction_check_interval);
    key(out, "allow_eviction");
    out << r.allow_eviction;
    key(out, "min_replicas_ack");
    out << r.min_replicas_ack;
    key(out, "consistency");
    out << (r.consistency == redis_consistency::strict ? "strict" : "async");
    key(out, "wait_timeout");
    out << duration_text(r.wait_timeout);
    client_tls(out, r.tls);
    out << YAML::EndMap;
    key(out, "memory");
    out << YAML::BeginMap;
    key(out, "max_entries");
    out << s.memory.max_entries;
    key(out, "max_bytes");
    out << size_text(s.memory.max_bytes);
    out << YAML::EndMap;
    key(out, "local_tier");
    out << YAML::BeginMap;
    key(out, "max_bytes");
    out << size_text(s.local_tier.max_bytes);
    key(out, "max_age");
    out << duration_text(s.local_tier.max_age);
    key(out, "admit");
    out << (s.local_tier.admit == tier_admission::replay ? "replay" : "complete");
    out << YAML::EndMap;
    key(out, "refusal");
    out << YAML::BeginMap;
    key(out, "errors");
    out << s.refusal.errors;
    key(out, "window");
    out << duration_text(s.refusal.window);
    out << YAML::EndMap;
    out << YAML::EndMap;
}

} // namespace idemgate::config::print
