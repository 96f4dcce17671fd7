// SPDX-License-Identifier: Apache-2.0
#include "loader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <utility>

namespace idemgate::config::detail {

const char* kind_name(const YAML::Node& node)
{
    switch (node.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Scalar: return "a scalar";
    default: return "nothing";
    }
}

std::string quote(std::string_view text)
{
    // Built with +=: GCC 12 warns falsely (-Wrestrict) on "..." + std::string(...) once inlined.
    std::string out;
    out.reserve(text.size() + 2);
    out += '"';
    out += text;
    out += '"';
    return out;
}

std::string child_path(const std::string& parent, std::string_view key)
{
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

namespace {

// Optimal string alignment distance (Levenshtein with adjacent transpositions), capped: the
// keys are short and only distances up to 2 matter.
std::size_t edit_distance(std::string_view a, std::string_view b)
{
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

} // namespace

std::string did_you_mean(std::string_view key, std::initializer_list<std::string_view> known)
{
    std::string_view best;
    std::size_t best_distance = 3;
    for (auto k : known) {
        auto distance = edit_distance(key, k);
        if (distance < best_distance) {
            best = k;
            best_distance = distance;
        }
    }
    return best.empty() ? std::string() : " (did you mean " + quote(best) + "?)";
}

text_position loader::position_of(std::string path) const
{
    // The key itself, or the nearest parent that was written ("routes[0].x" -> "routes[0]" ->
    // "routes").
    while (!path.empty()) {
        for (auto it = marks_.rbegin(); it != marks_.rend(); ++it)
            if (it->first == path)
                return it->second;
        auto cut = path.find_last_of(".[");
        if (cut == std::string::npos)
            break;
        path.resize(cut);
    }
    return {};
}

void loader::load(const YAML::Node& root, config& cfg)
{
    map_view top(*this, root, "",
                 {"listen", "admin_listen", "threads", "access_log", "log_level", "request_id_header",
                  "store", "upstreams", "routes", "limits", "timeouts", "admin", "tenants", "tls", "tracing",
                  "http2", "problems", "readiness"});
    if (root.IsDefined() && !root.IsNull() && !root.IsMap())
        return; // reported by `top`; nothing below can be read.
    read_endpoint(top, "listen", cfg.listen);
    read_endpoint(top, "admin_listen", cfg.admin_listen);
    read_int(top, "threads", cfg.threads, 0, 256);
    load_access_log(top, cfg);
    read_choice(top, "log_level", "a log level",
                {{"debug", log_severity::debug},
                 {"info", log_severity::info},
                 {"warn", log_severity::warn},
                 {"error", log_severity::error}},
                cfg.log_level);
    load_request_id(top, cfg);
    load_store(top, cfg.store);
    load_listen_tls(top, cfg.tls);
    load_http2(top, cfg.http2);
    load_upstreams(top, cfg.upstreams);
    load_routes(top, cfg);
    load_limits(top, cfg.limits);
    load_timeouts(top, cfg.timeouts);
    load_admin(top, cfg.admin);
    load_tenants(top, cfg.tenants);
    load_tracing(top, cfg.tracing);
    load_problems(top, cfg.problems);
    load_readiness(top, cfg.readiness);
    for (std::size_t i = 0; i < cfg.routes.size(); ++i)
        if (!cfg.routes[i].idempotency.credential_headers.empty() && cfg.store.key_secret.empty() &&
            cfg.store.key_secret_env.empty())
            problem("routes[" + std::to_string(i) + "].idempotency.credential_headers",
                    "needs store.key_secret_env (credentials are stored as HMACs under that secret)");
    for (std::size_t i = 0; i < cfg.routes.size(); ++i)
        if (cfg.routes[i].idempotency.tenant_from == tenant_source::client_cert &&
            (!cfg.tls || cfg.tls->client_auth == client_auth_mode::none))
            problem("routes[" + std::to_string(i) + "].idempotency.tenant_from",
                    "client_cert needs a TLS listener that asks for client certificates "
                    "(tls.client_auth: optional or required, with tls.client_ca_file)");
}

// `access_log: true|false`, or a map: enabled plus the writer's queue and batching.
void loader::load_access_log(const map_view& top, config& cfg)
{
    const auto* node = top.find("access_log");
    if (!node || !node->IsMap()) {
        read_bool(top, "access_log", cfg.access_log);
        return;
    }
    map_view map(*this, *node, "access_log", {"enabled", "queue_lines", "batch_bytes", "flush_interval"});
    auto& opts = cfg.access_log_options;
    read_bool(map, "enabled", cfg.access_log);
    read_int(map, "queue_lines", opts.queue_lines, 1, 16 * 1024 * 1024);
    read_size(map, "batch_bytes", opts.batch_bytes, false);
    if (opts.batch_bytes > 16 * 1024 * 1024) {
        problem(map.path_of("batch_bytes"), "must be at most 16MiB");
        opts.batch_bytes = 16 * 1024 * 1024;
    }
    read_duration(map, "flush_interval", opts.flush_interval);
}

// `request_id_header`: a header name, or "" to turn request IDs off.
void loader::load_request_id(const map_view& top, config& cfg)
{
    read_header_name(top, "request_id_header", cfg.request_id_header, true);
}

void loader::load_limits(const map_view& top, limits_config& limits)
{
    map_view map(*this, child(top, "limits"), "limits",
                 {"max_request_body", "max_record_body", "max_response_body", "max_header_bytes",
                  "max_response_header_bytes", "max_connections", "max_waiting"});
    read_size(map, "max_request_body", limits.max_request_body);
    read_size(map, "max_record_body", limits.max_record_body);
    read_size(map, "max_response_body", limits.max_response_body);
    // Unset, what is recorded follows a smaller max_response_body down (a configuration that
    // only lowered max_response_body keeps working).
    if (!map.find("max_record_body"))
        limits.max_record_body = std::min(limits.max_record_body, limits.max_response_body);
    if (limits.max_record_body > limits.max_response_body)
        problem(map.path_of("max_record_body"), "must not be above limits.max_response_body (" +
                                                    std::to_string(limits.max_response_body) + " bytes)");
    read_size(map, "max_header_bytes", limits.max_header_bytes, false);
    read_size(map, "max_response_header_bytes", limits.max_response_header_bytes, false);
    read_int(map, "max_connections", limits.max_connections, 1, std::numeric_limits<std::size_t>::max());
    read_int(map, "max_waiting", limits.max_waiting, 0, std::numeric_limits<std::size_t>::max());
}

// tenants: { <tenant>: { max_in_flight, new_keys_per_second, record_ttl, lock_ttl } }
void loader::load_tenants(const map_view& top, std::map<std::string, tenant_config, std::less<>>& tenants)
{
    map_view all(*this, child(top, "tenants"), "tenants", {});
    for (const auto& [name, node] : all.entries()) {
        auto path = all.path_of(name);
        if (name != "default" && !detail::is_tenant_name(name)) {
            problem(path, "a tenant is 1 to 255 characters without control characters (visible ASCII in "
                          "a tenant header; a certificate's common name may have spaces)");
            continue;
        }
        map_view map(*this, node, path, {"max_in_flight", "new_keys_per_second", "record_ttl", "lock_ttl"});
        tenant_config t;
        read_int(map, "max_in_flight", t.max_in_flight, 0, 1000000000);
        if (auto text = scalar(map, "new_keys_per_second", "a number")) {
            auto rate = detail::parse_rate(*text);
            if (!rate)
                problem(map.path_of("new_keys_per_second"),
                        quote(*text) + " is not a rate (a number >= 0, e.g. 200 or 0.5)");
            else
                t.new_keys_per_second = *rate;
        }
        if (map.find("record_ttl")) {
            duration d{0};
            read_duration(map, "record_ttl", d);
            if (d.count() > 0)
                t.record_ttl = d;
        }
        if (map.find("lock_ttl")) {
            duration d{0};
            read_duration(map, "lock_ttl", d);
            if (d.count() > 0)
                t.lock_ttl = d;
        }
        tenants.emplace(name, t);
    }
}

void loader::load_admin(const map_view& top, admin_config& admin)
{
    map_view map(*this, child(top, "admin"), "admin", {"token_env"});
    read_string(map, "token_env", admin.token_env);
    if (admin.token_env.empty())
        return;
    const char* value = getenv_(admin.token_env.c_str());
    if (!value || !*value)
        problem(map.path_of("token_env"), "environment variable " + quote(admin.token_env) + " is not set");
    else if (std::string_view(value).size() < 16)
        problem(map.path_of("token_env"),
                "environment variable " + quote(admin.token_env) + " must hold at least 16 bytes");
    else
        admin.token = value;
}

// problems.base_uri: a URI prefix the problem type names are appended to; it must be usable in a
// JSON string and a Link header as it is (visible ASCII, no quotes or angle brackets).
void loader::load_problems(const map_view& top, problems_config& problems)
{
    map_view map(*this, child(top, "problems"), "problems", {"base_uri"});
    read_string(map, "base_uri", problems.base_uri);
    bool ok = true;
    for (char ch : problems.base_uri) {
        auto c = static_cast<unsigned char>(ch);
        ok = ok && c > 0x20 && c < 0x7f && c != '"' && c != '<' && c != '>' && c != '\\';
    }
    const auto& uri = problems.base_uri;
    if (!ok || (!uri.empty() && uri.front() != '/' && uri.find(':') == std::string::npos))
        problem(map.path_of("base_uri"),
                quote(uri) +
                    " is not a URI prefix (e.g. \"https://docs.example.com/problems/\", or \"\" for the "
                    "gateway's own pages)");
}

// readiness: { store: required | ignore }
void loader::load_readiness(const map_view& top, readiness_config& readiness)
{
    map_view map(*this, child(top, "readiness"), "readiness", {"store"});
    read_choice(map, "store", "a readiness rule",
                {{"required", store_readiness::required}, {"ignore", store_readiness::ignore}},
                readiness.store);
}

void loader::load_tracing(const map_view& top, tracing_config& tracing)
{
    map_view map(
        *this, child(top, "tracing"), "tracing",
        {"otlp_endpoint", "sample_ratio", "service_name", "headers_env", "queue_spans", "record_tenant"});
    read_string(map, "otlp_endpoint", tracing.otlp_endpoint);
    if (!tracing.otlp_endpoint.empty()) {
        std::string_view url = tracing.otlp_endpoint;
        auto authority = url.starts_with("http://") ? url.substr(7) : std::string_view{};
        auto slash = authority.find('/');
        if (authority.empty() || slash == 0 ||
            !check_endpoint(authority.substr(0, slash == std::string_view::npos ? authority.size() : slash))
                 .value)
            problem(map.path_of("otlp_endpoint"), quote(tracing.otlp_endpoint) +
                                                      " is not an http://host:port/path URL (OTLP/HTTP, e.g. "
                                                      "http://otel-collector:4318/v1/traces)");
    }
    if (auto text = scalar(map, "sample_ratio", "a number from 0 to 1")) {
        auto ratio = parse_rate(*text);
        if (!ratio || *ratio < 0 || *ratio > 1)
            problem(map.path_of("sample_ratio"), quote(*text) + " is not a number from 0 to 1");
        else
            tracing.sample_ratio = *ratio;
    }
    read_string(map, "service_name", tracing.service_name);
    if (tracing.service_name.empty())
        problem(map.path_of("service_name"), "must not be empty");
    read_int(map, "queue_spans", tracing.queue_spans, 1, 1u << 24);
    read_bool(map, "record_tenant", tracing.record_tenant);
    read_string(map, "headers_env", tracing.headers_env);
    if (tracing.headers_env.empty())
        return;
    const char* value = getenv_(tracing.headers_env.c_str());
    if (!value) {
        problem(map.path_of("headers_env"),
                "environment variable " + quote(tracing.headers_env) + " is not set");
        return;
    }
    // "Name=value,Name2=value2", as OTEL_EXPORTER_OTLP_HEADERS.
    std::string_view rest = value;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        auto item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        auto eq = item.find('=');
        auto name = item.substr(0, eq);
        while (!name.empty() && name.front() == ' ')
            name.remove_prefix(1);
        while (!name.empty() && name.back() == ' ')
            name.remove_suffix(1);
        if (eq == std::string_view::npos || !is_token(name)) {
            problem(map.path_of("headers_env"),
                    "environment variable " + quote(tracing.headers_env) + " is not Name=value,Name2=value2");
            return;
        }
        auto header_value = item.substr(eq + 1);
        for (char c : header_value)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
                problem(map.path_of("headers_env"),
                        "environment variable " + quote(tracing.headers_env) + " holds control characters");
                return;
            }
        tracing.headers.emplace_back(std::string(name), std::string(header_value));
    }
}

void loader::load_timeouts(const map_view& top, timeouts_config& timeouts)
{
    map_view map(*this, child(top, "timeouts"), "timeouts",
                 {"header_read", "body_read", "idle", "client_write", "upstream_connect", "upstream_response",
                  "drain"});
    read_duration(map, "header_read", timeouts.header_read);
    read_duration(map, "body_read", timeouts.body_read);
    read_duration(map, "idle", timeouts.idle);
    read_duration(map, "client_write", timeouts.client_write);
    read_duration(map, "upstream_connect", timeouts.upstream_connect);
    read_duration(map, "upstream_response", timeouts.upstream_response);
    read_duration(map, "drain", timeouts.drain, true); // 0 = stop at once on SIGTERM
}

void loader::check_readable(const std::string& path, const std::string& file)
{
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(file.c_str(), "rb"), &std::fclose);
    char byte = 0;
    if (!f || (std::fread(&byte, 1, 1, f.get()) != 1 && std::ferror(f.get()))) {
        problem(path, "cannot read " + quote(file) + ": " + std::strerror(errno));
        return;
    }
    if (std::feof(f.get()))
        problem(path, quote(file) + " is empty");
}

void loader::load_client_tls(const map_view& parent, const std::string& path, client_tls_config& tls,
                             std::string_view plain)
{
    map_view map(*this, child(parent, "tls"), path,
                 {"enabled", "ca_file", "cert_file", "key_file", "server_name", "verify"});
    read_bool(map, "enabled", tls.enabled);
    read_string(map, "ca_file", tls.ca_file);
    read_string(map, "cert_file", tls.cert_file);
    read_string(map, "key_file", tls.key_file);
    read_string(map, "server_name", tls.server_name);
    read_bool(map, "verify", tls.verify);
    if (!tls.enabled) {
        for (auto [key, set] :
             {std::pair{"ca_file", !tls.ca_file.empty()}, std::pair{"cert_file", !tls.cert_file.empty()},
              std::pair{"key_file", !tls.key_file.empty()},
              std::pair{"server_name", !tls.server_name.empty()}, std::pair{"verify", !tls.verify}})
            if (set)
                problem(map.path_of(key), "set while " + map.path_of("enabled") +
                                              " is false (the connection would be " + std::string(plain) +
                                              "); set enabled: true or remove it");
        return;
    }
    if (!tls.cert_file.empty() && tls.key_file.empty())
        problem(map.path_of("cert_file"), "needs " + map.path_of("key_file") +
                                              " (a client certificate is useless without its private key)");
    if (tls.cert_file.empty() && !tls.key_file.empty())
        problem(map.path_of("key_file"),
                "needs " + map.path_of("cert_file") + " (the client certificate of this private key)");
    for (auto [key, file] : {std::pair{"ca_file", &tls.ca_file}, std::pair{"cert_file", &tls.cert_file},
                             std::pair{"key_file", &tls.key_file}})
        if (!file->empty())
            check_readable(map.path_of(key), *file);
    bool name_ok = true;
    for (char c : tls.server_name)
        name_ok = name_ok && (is_host_name_char(c) || is_ipv6_char(c));
    if (!name_ok)
        problem(map.path_of("server_name"), quote(tls.server_name) + " is not a host name or IP address");
}

} // namespace idemgate::config::detail
