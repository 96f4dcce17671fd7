// The effective configuration as YAML (idemgate --print-config): every key the loader knows,
// with defaults filled in, in the order config/idemgate.example.yaml uses; secrets never
// printed, only where they come from. Parsing the output gives the same configuration.
#include "idemgate/config/config.hpp"

#include <charconv>
#include <yaml-cpp/yaml.h>

namespace idemgate::config {

namespace {

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
    key(out, "min_replicas_ack");
    out << r.min_replicas_ack;
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
    out << YAML::EndMap;
}

void idempotency(YAML::Emitter& out, const idempotency_config& i)
{
    key(out, "idempotency");
    out << YAML::BeginMap;
    key(out, "methods");
    string_list(out, i.methods);
    key(out, "key_header");
    out << i.key_header;
    key(out, "required");
    out << i.required;
    key(out, "lock_ttl");
    out << duration_text(i.lock_ttl);
    key(out, "record_ttl");
    out << duration_text(i.record_ttl);
    if (i.tenant_from == tenant_source::client_cert) {
        key(out, "tenant_from");
        out << "client_cert";
    } else {
        key(out, "tenant_header");
        out << i.tenant_header;
    }
    key(out, "mismatch_status");
    out << i.mismatch_status;
    key(out, "credential_headers");
    string_list(out, i.credential_headers);
    key(out, "fingerprint");
    out << YAML::BeginMap;
    key(out, "query");
    out << i.fingerprint.query;
    key(out, "headers");
    string_list(out, i.fingerprint.headers);
    key(out, "json");
    out << (i.fingerprint.json == json_mode::raw ? "raw" : "canonical");
    key(out, "ignore_json_fields");
    string_list(out, i.fingerprint.ignore_json_fields);
    out << YAML::EndMap;
    key(out, "mode");
    out << (i.mode == route_mode::enforce ? "enforce" : "shadow");
    key(out, "expose_expiry");
    out << i.expose_expiry;
    key(out, "on_unknown_outcome");
    out << (i.on_unknown_outcome == unknown_outcome_mode::release ? "release" : "hold");
    key(out, "on_in_flight");
    out << (i.on_in_flight == in_flight_mode::reject ? "reject" : "wait");
    key(out, "wait_timeout");
    out << duration_text(i.wait_timeout);
    // Each class, then every code whose action differs from its class's.
    static constexpr const char* actions[] = {"record", "release", "hold"};
    key(out, "on_status");
    out << YAML::BeginMap;
    for (unsigned c = 1; c <= 5; ++c) {
        out << YAML::Key << YAML::DoubleQuoted << (std::to_string(c) + "xx");
        out << YAML::Value << actions[static_cast<int>(i.on_status.class_action(c))];
    }
    for (unsigned status = 100; status < 600; ++status) {
        auto action = i.on_status.action_for(status);
        if (action == i.on_status.class_action(status / 100))
            continue;
        out << YAML::Key << YAML::DoubleQuoted << std::to_string(status);
        out << YAML::Value << actions[static_cast<int>(action)];
    }
    out << YAML::EndMap;
    key(out, "status_header");
    out << i.status_header;
    key(out, "replay_drop_headers");
    string_list(out, i.replay_drop_headers);
    key(out, "tombstone_ttl");
    out << duration_text(i.tombstone_ttl);
    key(out, "attempt_header");
    out << i.attempt_header;
    key(out, "key_format");
    out << YAML::BeginMap;
    key(out, "min_length");
    out << i.key_format.min_length;
    key(out, "max_length");
    out << i.key_format.max_length;
    key(out, "pattern");
    out << YAML::DoubleQuoted << i.key_format.pattern;
    out << YAML::EndMap;
    key(out, "key_space");
    out << (i.key_space == key_space_mode::tenant ? "tenant" : "route");
    key(out, "key_from");
    out << (i.key_from == key_source::header ? "header"
            : i.key_from == key_source::json ? "json"
                                             : "header_or_json");
    if (i.key_from != key_source::header) {
        key(out, "key_json_pointers");
        string_list(out, i.key_json_pointers);
    }
    key(out, "client_lookup_path");
    out << YAML::DoubleQuoted << i.client_lookup_path;
    out << YAML::EndMap;
}

} // namespace

std::string print_config(const config& c)
{
    YAML::Emitter out;
    out << YAML::BeginMap;
    key(out, "listen");
    out << endpoint_text(c.listen);
    key(out, "admin_listen");
    out << endpoint_text(c.admin_listen);
    key(out, "threads");
    out << c.threads;
    key(out, "access_log");
    out << YAML::BeginMap;
    key(out, "enabled");
    out << c.access_log;
    key(out, "queue_lines");
    out << c.access_log_options.queue_lines;
    key(out, "batch_bytes");
    out << size_text(c.access_log_options.batch_bytes);
    key(out, "flush_interval");
    out << duration_text(c.access_log_options.flush_interval);
    out << YAML::EndMap;
    key(out, "log_level");
    switch (c.log_level) {
    case log_severity::debug: out << "debug"; break;
    case log_severity::info: out << "info"; break;
    case log_severity::warn: out << "warn"; break;
    case log_severity::error: out << "error"; break;
    }
    key(out, "request_id_header");
    out << c.request_id_header;
    store(out, c.store);
    if (c.tls) {
        const auto& t = *c.tls;
        key(out, "tls");
        out << YAML::BeginMap;
        key(out, "cert_file");
        out << t.cert_file;
        key(out, "key_file");
        out << t.key_file;
        key(out, "min_version");
        out << (t.min_version == 0x0304 ? "1.3" : "1.2");
        key(out, "client_ca_file");
        out << t.client_ca_file;
        key(out, "client_auth");
        out << (t.client_auth == client_auth_mode::none       ? "none"
                : t.client_auth == client_auth_mode::optional ? "optional"
                                                              : "required");
        out << YAML::EndMap;
    }
    key(out, "upstreams");
    out << YAML::BeginMap;
    for (const auto& u : c.upstreams) {
        key(out, u.name.c_str());
        out << YAML::BeginMap;
        key(out, "addresses");
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& a : u.addresses)
            out << endpoint_text(a);
        out << YAML::EndSeq;
        key(out, "max_idle_connections");
        out << u.max_idle_connections;
        key(out, "balance");
        out << (u.balance == balance_mode::round_robin ? "round_robin" : "least_pending");
        key(out, "resolve_every");
        out << duration_text(u.resolve_every);
        key(out, "eject_after_failures");
        out << u.eject_after_failures;
        key(out, "eject_for");
        out << duration_text(u.eject_for);
        key(out, "hosts_file");
        out << u.hosts_file;
        client_tls(out, u.tls);
        out << YAML::EndMap;
    }
    out << YAML::EndMap;
    key(out, "routes");
    out << YAML::BeginSeq;
    for (const auto& r : c.routes) {
        out << YAML::BeginMap;
        key(out, "path_prefix");
        out << r.path_prefix;
        key(out, "upstream");
        out << r.upstream;
        if (r.idempotency.enabled)
            idempotency(out, r.idempotency);
        out << YAML::EndMap;
    }
    out << YAML::EndSeq;
    key(out, "admin");
    out << YAML::BeginMap;
    key(out, "token_env");
    out << c.admin.token_env;
    out << YAML::EndMap;
    key(out, "limits");
    out << YAML::BeginMap;
    key(out, "max_request_body");
    out << size_text(c.limits.max_request_body);
    key(out, "max_record_body");
    out << size_text(c.limits.max_record_body);
    key(out, "max_response_body");
    out << size_text(c.limits.max_response_body);
    key(out, "max_header_bytes");
    out << size_text(c.limits.max_header_bytes);
    key(out, "max_connections");
    out << c.limits.max_connections;
    key(out, "max_waiting");
    out << c.limits.max_waiting;
    out << YAML::EndMap;
    key(out, "timeouts");
    out << YAML::BeginMap;
    key(out, "header_read");
    out << duration_text(c.timeouts.header_read);
    key(out, "body_read");
    out << duration_text(c.timeouts.body_read);
    key(out, "idle");
    out << duration_text(c.timeouts.idle);
    key(out, "client_write");
    out << duration_text(c.timeouts.client_write);
    key(out, "upstream_connect");
    out << duration_text(c.timeouts.upstream_connect);
    key(out, "upstream_response");
    out << duration_text(c.timeouts.upstream_response);
    key(out, "drain");
    out << duration_text(c.timeouts.drain);
    out << YAML::EndMap;
    key(out, "tenants");
    out << YAML::BeginMap;
    for (const auto& [name, t] : c.tenants) {
        key(out, name.c_str());
        out << YAML::BeginMap;
        key(out, "max_in_flight");
        out << t.max_in_flight;
        key(out, "new_keys_per_second");
        out << number_text(t.new_keys_per_second);
        if (t.record_ttl) {
            key(out, "record_ttl");
            out << duration_text(*t.record_ttl);
        }
        if (t.lock_ttl) {
            key(out, "lock_ttl");
            out << duration_text(*t.lock_ttl);
        }
        out << YAML::EndMap;
    }
    out << YAML::EndMap;
    key(out, "tracing");
    out << YAML::BeginMap;
    key(out, "otlp_endpoint");
    out << c.tracing.otlp_endpoint;
    key(out, "sample_ratio");
    out << number_text(c.tracing.sample_ratio);
    key(out, "service_name");
    out << c.tracing.service_name;
    key(out, "headers_env");
    out << c.tracing.headers_env;
    key(out, "queue_spans");
    out << c.tracing.queue_spans;
    key(out, "record_tenant");
    out << c.tracing.record_tenant;
    out << YAML::EndMap;
    key(out, "problems");
    out << YAML::BeginMap;
    key(out, "base_uri");
    out << YAML::DoubleQuoted << c.problems.base_uri;
    out << YAML::EndMap;
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

} // namespace idemgate::config
