// SPDX-License-Identifier: Apache-2.0
// The top level of the file and its small sections (keys.hpp): access_log, limits, timeouts,
// admin, tenants, tracing, problems, readiness.
#include "keys.hpp"
#include "listen_kinds.hpp"

#include <algorithm>
#include <string>

namespace idemgate::config::detail {

namespace {

std::string log_path_problem(std::string_view path)
{
    return path.empty() || path.front() == '/' ? std::string() : "must be an absolute path (\"\": stdout)";
}

// access_log: true|false, or a map: enabled, the writer's queue and batching, where it writes.
const section<config>& access_log_keys()
{
    using a = access_log_config;
    constexpr auto options = &config::access_log_options;
    static const section<config> keys{
        {"enabled", &config::access_log, a_bool{}},
        {"queue_lines", member_of<options, &a::queue_lines>{}, an_int{1, 16 * 1024 * 1024}},
        {"batch_bytes", member_of<options, &a::batch_bytes>{},
         a_size{.zero = false, .max = 16 * 1024 * 1024, .bounds = "at most 16MiB"}},
        {"flush_interval", member_of<options, &a::flush_interval>{}, a_duration{}},
        {"path",
         member_of<options, &a::path>{},
         a_string{.problem = log_path_problem, .quoted = true},
         {.when = reload::restart}},
    };
    return keys;
}

struct bool_or_map {
    void read(loader& l, const map_view& m, std::string_view k, config& cfg) const
    {
        const auto* node = m.find(k);
        if (!node || !node->IsMap())
            a_bool{}.read(l, m, k, cfg.access_log);
        else
            access_log_keys().read(l, *node, m.path_of(k), cfg);
    }
    void print(YAML::Emitter& out, const config& cfg) const { access_log_keys().print(out, cfg); }
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const
    {
        access_log_keys().list(path, restart, out);
    }
};

const section<limits_config>& limits_keys()
{
    using l = limits_config;
    static const section<l> keys{
        {"max_request_body", &l::max_request_body, a_size{}},
        {"max_record_body", &l::max_record_body, a_size{}},
        {"max_response_body",
         &l::max_response_body,
         a_size{},
         {.then =
              [](loader& load, const map_view& map, l& limits) {
                  // Unset, what is recorded follows a smaller max_response_body down (a
                  // configuration that only lowered max_response_body keeps working).
                  if (!map.find("max_record_body"))
                      limits.max_record_body = std::min(limits.max_record_body, limits.max_response_body);
                  if (limits.max_record_body > limits.max_response_body)
                      load.problem(map.path_of("max_record_body"),
                                   "must not be above limits.max_response_body (" +
                                       std::to_string(limits.max_response_body) + " bytes)");
              }}},
        {"max_header_bytes", &l::max_header_bytes, a_size{.zero = false}},
        {"max_response_header_bytes", &l::max_response_header_bytes, a_size{.zero = false}},
        {"max_connections", &l::max_connections, an_int{.min = 1}},
        {"max_waiting", &l::max_waiting, an_int{}},
    };
    return keys;
}

const section<timeouts_config>& timeouts_keys()
{
    using t = timeouts_config;
    static const section<t> keys{
        {"header_read", &t::header_read, a_duration{}},
        {"body_read", &t::body_read, a_duration{}},
        {"idle", &t::idle, a_duration{}},
        {"client_write", &t::client_write, a_duration{}},
        {"upstream_connect", &t::upstream_connect, a_duration{}},
        {"upstream_response", &t::upstream_response, a_duration{}},
        {"drain", &t::drain, a_duration{.zero = true}}, // 0 = stop at once on SIGTERM
    };
    return keys;
}

// admin.shadow_window: parse_shadow_window's rule.
struct a_shadow_window {
    void read(loader& l, const map_view& m, std::string_view k, duration& out) const
    {
        auto text = l.scalar(m, k, "a duration");
        if (!text)
            return;
        if (auto value = parse_shadow_window(*text))
            out = *value;
        else
            l.problem(m.path_of(k), quote(*text) + " " + std::string(shadow_window_rule));
    }
    void print(YAML::Emitter& out, duration v) const { out << duration_text(v); }
};

const section<admin_config>& admin_keys()
{
    static const section<admin_config> keys{
        {"token_env",
         &admin_config::token_env,
         a_string{},
         {.then =
              [](loader& l, const map_view& map, admin_config& admin) {
                  if (admin.token_env.empty())
                      return;
                  const char* value = l.env(admin.token_env);
                  auto name = quote(admin.token_env);
                  if (!value || !*value)
                      l.problem(map.path_of("token_env"), "environment variable " + name + " is not set");
                  else if (std::string_view(value).size() < 16)
                      l.problem(map.path_of("token_env"),
                                "environment variable " + name + " must hold at least 16 bytes");
                  else
                      admin.token = value;
              }}},
        {"shadow_window", &admin_config::shadow_window, a_shadow_window{}, {.when = reload::reloadable}},
    };
    return keys;
}

// A tenant's record_ttl or lock_ttl: absent (or 0) = the route's.
struct optional_duration {
    void read(loader& l, const map_view& m, std::string_view k, std::optional<duration>& out) const
    {
        duration d{0};
        if (m.find(k))
            a_duration{}.read(l, m, k, d);
        if (d.count() > 0)
            out = d;
    }
    void print(YAML::Emitter& out, const std::optional<duration>& v) const { out << duration_text(*v); }
    bool shown(const std::optional<duration>& v) const { return v.has_value(); }
};

const section<tenant_config>& tenant_keys()
{
    using t = tenant_config;
    static const section<t> keys{
        {"max_in_flight", &t::max_in_flight, an_int{0, 1000000000}},
        {"new_keys_per_second", &t::new_keys_per_second,
         a_number{"a number", "a rate (a number >= 0, e.g. 200 or 0.5)"}},
        {"record_ttl", &t::record_ttl, optional_duration{}},
        {"lock_ttl", &t::lock_ttl, optional_duration{}},
    };
    return keys;
}

// tenants: { <tenant>: { max_in_flight, new_keys_per_second, record_ttl, lock_ttl } }
struct tenant_map {
    using tenants = std::map<std::string, tenant_config, std::less<>>;
    void read(loader& l, const map_view& m, std::string_view k, tenants& out) const
    {
        map_view all(l, loader::child(m, k), m.path_of(k), {});
        for (const auto& [name, node] : all.entries()) {
            auto path = all.path_of(name);
            if (name != "default" && !is_tenant_name(name)) {
                l.problem(path,
                          "a tenant is 1 to 255 characters without control characters (visible ASCII in "
                          "a tenant header; a certificate's common name may have spaces)");
                continue;
            }
            tenant_config t;
            tenant_keys().read(l, node, path, t);
            out.emplace(name, t);
        }
    }
    void print(YAML::Emitter& out, const tenants& all) const
    {
        out << YAML::BeginMap;
        for (const auto& [name, t] : all) {
            out << YAML::Key << name << YAML::Value;
            tenant_keys().print(out, t);
        }
        out << YAML::EndMap;
    }
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const
    {
        list_named(tenant_keys(), path, restart, out);
    }
};

// tracing.headers_env: "Name=value,Name2=value2", as OTEL_EXPORTER_OTLP_HEADERS.
void resolve_export_headers(loader& l, const map_view& map, tracing_config& tracing)
{
    if (tracing.headers_env.empty())
        return;
    auto path = map.path_of("headers_env");
    auto name = quote(tracing.headers_env);
    const char* value = l.env(tracing.headers_env);
    if (!value) {
        l.problem(path, "environment variable " + name + " is not set");
        return;
    }
    if (auto problem = header_list_problem(value, false, tracing.headers); !problem.empty())
        l.problem(path, "environment variable " + name + " " + problem);
}

const section<tracing_config>& tracing_keys()
{
    using t = tracing_config;
    static const auto tls_keys = client_tls_section("plain HTTP");
    static const section<t> keys{
        {
            {"otlp_endpoint",
             &t::otlp_endpoint,
             a_string{.problem = otlp_url_problem},
             {.then = otlp_endpoint_from_environment}},
            {"sample_ratio", &t::sample_ratio, a_number{"a number from 0 to 1", "a number from 0 to 1", 1}},
            {"service_name", &t::service_name, a_string{.problem = must_not_be_empty}},
            {"headers_env", &t::headers_env, a_string{}, {.then = resolve_export_headers}},
            {"queue_spans", &t::queue_spans, an_int{1, 1u << 24}},
            {"record_tenant", &t::record_tenant, a_bool{}},
            {"tls", &t::tls, nested{tls_keys}, {.shown = [](const t& v) { return v.tls.enabled; }}},
        },
        tracing_from_environment};
    return keys;
}

// problems.base_uri: a URI prefix the problem type names are appended to; it must be usable in a
// JSON string and a Link header as it is (visible ASCII, no quotes or angle brackets).
std::string base_uri_problem(std::string_view uri)
{
    bool ok = true;
    for (char ch : uri) {
        auto c = static_cast<unsigned char>(ch);
        ok = ok && c > 0x20 && c < 0x7f && c != '"' && c != '<' && c != '>' && c != '\\';
    }
    if (!ok || (!uri.empty() && uri.front() != '/' && uri.find(':') == std::string_view::npos))
        return quote(uri) +
               " is not a URI prefix (e.g. \"https://docs.example.com/problems/\", or \"\" for the "
               "gateway's own pages)";
    return {};
}

const section<problems_config>& problems_keys()
{
    static const section<problems_config> keys{
        {"base_uri", &problems_config::base_uri, a_string{.problem = base_uri_problem, .quoted = true}},
    };
    return keys;
}

const section<readiness_config>& readiness_keys()
{
    static const section<readiness_config> keys{
        {"store", &readiness_config::store, a_choice{"a readiness rule"}},
    };
    return keys;
}

// Whether two listening addresses take the same port: the same host, or a wildcard (which
// binds every address, and "::" the IPv4 ones too) beside any host of that port.
bool overlap(const endpoint& a, const endpoint& b)
{
    if (a.port != b.port || a.port == 0)
        return false;
    auto lower = [](std::string s) {
        for (auto& c : s)
            c = c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
        return s == "localhost" ? std::string("127.0.0.1") : s;
    };
    auto wildcard = [](const std::string& h) { return h.empty() || h == "0.0.0.0" || h == "::" || h == "*"; };
    auto x = lower(a.host);
    auto y = lower(b.host);
    return x == y || wildcard(x) || wildcard(y);
}

// Routes are tried in order and the first whose path_prefix starts the request's (normalised)
// path takes it, whatever the method: a route whose prefix starts with an earlier route's
// prefix (or equals it) never gets a request.
void check_unreachable_routes(loader& l, const config& cfg)
{
    for (std::size_t j = 0; j < cfg.routes.size(); ++j)
        for (std::size_t i = 0; i < j; ++i) {
            const auto& earlier = cfg.routes[i].path_prefix;
            const auto& later = cfg.routes[j].path_prefix;
            if (earlier.empty() || later.empty() || !later.starts_with(earlier))
                continue;
            l.problem("routes[" + std::to_string(j) + "].path_prefix",
                      quote(later) + " is never reached: routes[" + std::to_string(i) + "].path_prefix " +
                          quote(earlier) +
                          " comes first and takes every path it would (the first route whose prefix "
                          "matches takes a request, for every method); list the longer prefix first");
            break;
        }
}

// Rules between sections, once every section is read.
void check_across(loader& l, const map_view&, config& cfg)
{
    resolve_timeouts(cfg);
    if (overlap(cfg.listen, cfg.admin_listen))
        l.problem("admin_listen", quote(cfg.admin_listen.to_string()) + " takes the same port as listen " +
                                      quote(cfg.listen.to_string()) +
                                      ": the admin API needs an address and port of its own");
    check_unreachable_routes(l, cfg);
    for (std::size_t i = 0; i < cfg.routes.size(); ++i)
        if (!cfg.routes[i].idempotency.credential_headers.empty() && cfg.store.key_secret.empty() &&
            cfg.store.key_secret_env.empty())
            l.problem("routes[" + std::to_string(i) + "].idempotency.credential_headers",
                      "needs store.key_secret_env (credentials are stored as HMACs under that secret)");
    for (std::size_t i = 0; i < cfg.routes.size(); ++i)
        if (cfg.routes[i].idempotency.tenant_from == tenant_source::client_cert &&
            (!cfg.tls || cfg.tls->client_auth == client_auth_mode::none))
            l.problem("routes[" + std::to_string(i) + "].idempotency.tenant_from",
                      "client_cert needs a TLS listener that asks for client certificates "
                      "(tls.client_auth: optional or required, with tls.client_ca_file)");
}

} // namespace

// The top level, in the order of config/idemgate.example.yaml (and --print-config). A
// restart-only key is one the running process cannot change; restart_only
// (gateway/src/state/process.hpp) holds its running value.
const section<config>& config_keys()
{
    using c = config;
    const key_options<c> restart{.when = reload::restart};
    static const section<c> keys{
        {
            {"listen", whole, endpoint_or_map{}, restart},
            {"admin_listen", &c::admin_listen, admin_endpoint{}, restart},
            {"threads", &c::threads, an_int{0, 256}, restart},
            {"access_log", whole, bool_or_map{}},
            {"log_level", &c::log_level, a_choice{"a log level"}},
            {"request_id_header", &c::request_id_header, a_header{.empty = true}}, // "" = off
            {"store", &c::store, nested{store_keys()}, restart},
            {"tls", &c::tls, optional_listen_tls{}}, // on or off needs a restart: the gateway's business
            {"upstreams", &c::upstreams, upstream_map{}},
            {"routes", whole, route_list{}},
            {"admin", &c::admin, nested{admin_keys()}, restart},
            {"limits", &c::limits, nested{limits_keys()}},
            {"timeouts", &c::timeouts, nested{timeouts_keys()}},
            {"tenants", &c::tenants, tenant_map{}},
            {"tracing", &c::tracing, nested{tracing_keys()}, restart}, // the exporter is made once
            {"http2", &c::http2, nested{http2_keys()}},
            {"problems", &c::problems, nested{problems_keys()}},
            {"readiness", &c::readiness, nested{readiness_keys()}},
        },
        check_across};
    return keys;
}

} // namespace idemgate::config::detail
