// SPDX-License-Identifier: Apache-2.0
// The effective configuration as YAML (idemgate --print-config): every key the loader knows,
// with defaults filled in, in the order config/idemgate.example.yaml uses; secrets never
// printed, only where they come from. Parsing the output gives the same configuration.
#include "print_parts.hpp"

namespace idemgate::config {

namespace {

using namespace print;

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
    key(out, "decode");
    out << (i.fingerprint.decode == body_decoding::gzip ? "gzip" : "none");
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
    const auto& r = i.reconcile;
    out << YAML::Key << "reconcile" << YAML::Value << YAML::BeginMap << YAML::Key << "path" << YAML::Value
        << YAML::DoubleQuoted << r.path << YAML::Key << "method" << YAML::Value << r.method << YAML::Key
        << "after" << YAML::Value << duration_text(r.after) << YAML::Key << "every" << YAML::Value
        << duration_text(r.every) << YAML::Key << "give_up_after" << YAML::Value
        << duration_text(r.give_up_after) << YAML::Key << "found" << YAML::Value << YAML::Flow << r.found
        << YAML::Key << "not_found" << YAML::Value << YAML::Flow << r.not_found << YAML::EndMap;
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
    key(out, "max_response_header_bytes");
    out << size_text(c.limits.max_response_header_bytes);
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
    key(out, "http2");
    out << YAML::BeginMap;
    key(out, "enabled");
    out << c.http2.enabled;
    key(out, "cleartext");
    out << c.http2.cleartext;
    key(out, "max_concurrent_streams");
    out << c.http2.max_concurrent_streams;
    for (auto [name, value] : {std::pair{"initial_window_size", c.http2.initial_window_size},
                               std::pair{"max_frame_size", c.http2.max_frame_size},
                               std::pair{"max_header_list_size", c.http2.max_header_list_size}}) {
        key(out, name);
        out << size_text(value);
    }
    key(out, "idle_timeout");
    out << duration_text(c.http2.idle_timeout);
    out << YAML::EndMap;
    key(out, "problems");
    out << YAML::BeginMap;
    key(out, "base_uri");
    out << YAML::DoubleQuoted << c.problems.base_uri;
    out << YAML::EndMap;
    key(out, "readiness");
    out << YAML::BeginMap;
    key(out, "store");
    out << (c.readiness.store == store_readiness::required ? "required" : "ignore");
    out << YAML::EndMap;
    out << YAML::EndMap;
    return std::string(out.c_str()) + "\n";
}

} // namespace idemgate::config
