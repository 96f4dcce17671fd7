// SPDX-License-Identifier: Apache-2.0
#pragma once
// idemgate's configuration: YAML in, typed aggregates out. Every default documented here is
// the value used when the key is absent; config/idemgate.example.yaml shows every key. A key
// that takes one of a few words is an enumeration defined with its description
// (BOOST_DEFINE_ENUM_CLASS): the words are the enumerators' names, read and printed from it.
#include <array>
#include <boost/describe/enum.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <idemgate/config/admin_config.hpp>
#include <idemgate/config/listen_proxy_config.hpp>
#include <idemgate/config/reconcile_config.hpp>
#include <idemgate/config/store_config.hpp>
#include <idemgate/config/timeouts_config.hpp>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idemgate::config {

// How a request picks one of an upstream's addresses: round_robin, each I/O thread takes the
// healthy addresses in turn; least_pending, the healthy address with the fewest requests in flight
// (all threads together).
BOOST_DEFINE_ENUM_CLASS(balance_mode, round_robin, least_pending);

// When an upstream's host names must resolve: start, before the gateway starts (and before a
// reload applies; --check resolves them too); runtime, in the background after start, the
// gateway not ready until they do (names that exist only where it is deployed).
BOOST_DEFINE_ENUM_CLASS(resolve_mode, start, runtime);

struct upstream_config {
    std::string name;
    endpoint address;                      // the first of `addresses` (what `address:` set)
    std::vector<endpoint> addresses;       // `address` or `addresses`: every name's every A/AAAA result
    std::size_t max_idle_connections = 64; // keep-alive pool per I/O thread (all addresses)
    balance_mode balance = balance_mode::round_robin;
    duration resolve_every{0}; // re-resolve the names this often; 0 = only at start (and reload)
    resolve_mode resolve = resolve_mode::start;
    unsigned eject_after_failures = 3; // consecutive connect failures that eject an address; 0 = never
    duration eject_for{10000};         // how long an ejected address is skipped
    // Look host names up in this hosts(5) file instead of the system resolver, read again at
    // every resolution ("" = the resolver): a static name map the operator edits in place.
    std::string hosts_file;
    upstream_tls_config tls;
    timeout_overrides timeouts; // upstream_connect, upstream_response
};

// At most this many addresses per upstream (listed, and after resolution): bounds the pools and
// the per-address metric labels.
inline constexpr std::size_t max_upstream_addresses = 64;

// TLS termination on `listen`: present = HTTPS only on that port.
BOOST_DEFINE_ENUM_CLASS(client_auth_mode, none, optional, required);
struct listen_tls_config {
    std::string cert_file;      // PEM chain, leaf first (required)
    std::string key_file;       // its private key, PEM (required)
    int min_version = 0x0303;   // TLS1_2_VERSION or TLS1_3_VERSION ("1.2" | "1.3")
    std::string client_ca_file; // client certificates are verified against it (needs client_auth)
    client_auth_mode client_auth = client_auth_mode::none;
};

BOOST_DEFINE_ENUM_CLASS(json_mode, raw, canonical);
BOOST_DEFINE_ENUM_CLASS(route_mode, enforce, shadow);
BOOST_DEFINE_ENUM_CLASS(unknown_outcome_mode, release, hold);
BOOST_DEFINE_ENUM_CLASS(in_flight_mode, reject, wait);
// What happens to a key when its upstream answers with a status: kept for replay, freed (a
// retry executes), or held as outcome_unknown (duplicates get 409 outcome-unknown).
BOOST_DEFINE_FIXED_ENUM_CLASS(status_action, std::uint8_t, record, release, hold);

// routes[].idempotency.on_status resolved into one action per status 100-599: the defaults
// ("5xx", "408", "425", "429": release; everything else: record) with the route's entries
// over them, a code beating its class. A status outside 100-599 follows 5xx.
class status_policy {
public:
    status_policy();
    status_action action_for(unsigned status) const noexcept
    {
        return status >= 100 && status < 600 ? actions_[status - 100] : actions_[500 - 100];
    }
    // Resolves the table: `classes` for 1xx..5xx, then every code of `codes` over its class.
    void resolve(const std::array<status_action, 5>& classes,
                 const std::map<unsigned, status_action>& codes) noexcept;
    static const std::array<status_action, 5> default_classes;
    static const std::map<unsigned, status_action>& default_codes();
    // The action of class `c` (1 for 1xx ... 5 for 5xx) as resolved; a code may differ from it.
    status_action class_action(unsigned c) const noexcept { return classes_[c - 1]; }

private:
    std::array<status_action, 500> actions_;
    std::array<status_action, 5> classes_;
};
// Where the tenant of a guarded request comes from: the tenant_header (or none when it is
// empty), or the common name of the client certificate verified by the TLS listener.
BOOST_DEFINE_ENUM_CLASS(tenant_source, header, client_cert);

// What the request fingerprint covers besides method and path.
// A request body's content coding undone before it is fingerprinted.
BOOST_DEFINE_ENUM_CLASS(body_decoding, none, gzip);

struct fingerprint_config {
    bool query = true;                           // the query string
    std::vector<std::string> headers;            // header values that join the fingerprint
    json_mode json = json_mode::raw;             // canonical: parsed, keys sorted, no whitespace
    std::vector<std::string> ignore_json_fields; // JSON Pointers removed first (implies canonical)
    // gzip: a body sent with Content-Encoding: gzip is fingerprinted decoded (bounded by
    // limits.max_request_body); none: the bytes as sent.
    body_decoding decode = body_decoding::none;
    // Everything above as one string; it is hashed into the fingerprint, so a record made under
    // other options never matches (it is a mismatch).
    std::string describe() const;
};

// A compiled routes[].idempotency.key_format.pattern (an ECMAScript regular expression),
// defined in <idemgate/config/key_pattern.hpp>: compiled once at load, shared by copies.
class key_pattern;

// What a decoded idempotency key must look like (routes[].idempotency.key_format).
struct key_format_config {
    std::size_t min_length = 1; // 1-255, <= max_length
    std::size_t max_length = 255;
    // "" = any characters 0x21-0x7E; "uuid" = the 8-4-4-4-12 hex form (either case); otherwise an
    // ECMAScript regular expression the whole key must match (characters 0x20-0x7E: a space only
    // where the pattern allows it).
    std::string pattern;
    bool uuid = false;                        // pattern == "uuid"
    std::shared_ptr<const key_pattern> regex; // the compiled pattern; null for "" and "uuid"
};

// Where a guarded request's key comes from: the key header (as always), a field of a JSON body,
// or the header when present and the body otherwise.
BOOST_DEFINE_ENUM_CLASS(key_source, header, json, header_or_json);

// Whose requests share one key space: a tenant's (every route, as before) or a route's (the
// route's path_prefix joins the scope).
BOOST_DEFINE_ENUM_CLASS(key_space_mode, tenant, route);

struct idempotency_config {
    bool enabled = false;                              // true when the route has an idempotency block
    std::vector<std::string> methods{"POST", "PATCH"}; // upper-case
    std::string key_header = "Idempotency-Key";
    bool required = false;
    duration lock_ttl{30000};
    duration record_ttl{24LL * 3600 * 1000};
    std::string tenant_header; // "" = single default scope
    tenant_source tenant_from = tenant_source::header;
    // True when requests are scoped by a tenant (a header or the client certificate).
    bool tenant_scoped() const noexcept
    {
        return tenant_from == tenant_source::client_cert || !tenant_header.empty();
    }
    unsigned mismatch_status = 409; // 409 (seed) or 422 (IETF draft)
    // Each header's HMAC-SHA256(store.key_secret, value) joins the scope; an absent header is
    // its own anonymous scope. Raw values never reach the store, logs or metrics.
    std::vector<std::string> credential_headers;
    fingerprint_config fingerprint;
    route_mode mode = route_mode::enforce;
    // A request sent upstream that got no answer (timeout or connection lost after sending):
    // hold the key as outcome_unknown until record_ttl (the default: the upstream may have run
    // it, so it is never run again), or release it (a retry executes again: for APIs that are
    // safe to repeat).
    unknown_outcome_mode on_unknown_outcome = unknown_outcome_mode::hold;
    bool expose_expiry = false; // recorded and replayed answers carry Idempotency-Expires
    // A duplicate of a request still in flight: 409 + Retry-After at once (reject), or wait up to
    // wait_timeout for the first answer and replay it (wait).
    in_flight_mode on_in_flight = in_flight_mode::reject;
    duration wait_timeout{10000};
    // What each upstream status does to the key (on_status); the gateway's own 502/504 follow
    // on_unknown_outcome instead.
    status_policy on_status;
    // Every answer to a keyed request says what the gateway did with the key ("" = off).
    std::string status_header = "Idempotency-Status";
    // Fields a replay leaves out (case-insensitive; a trailing '*' matches a prefix). Replays
    // also carry a fresh Date instead of the recorded one.
    std::vector<std::string> replay_drop_headers{"Set-Cookie", "Retry-After", "X-RateLimit-*",
                                                 "RateLimit",  "RateLimit-*", "RateLimit-Policy"};
    // > 0: after record_ttl a compact record (fingerprint, status, time, Location, body SHA-256)
    // outlives the answer this long, and a retry is refused instead of executed. 0 = off.
    duration tombstone_ttl{0};
    // Sent upstream with the number of this execution of the key (1, then 2 after a release, ...).
    // "" = off.
    std::string attempt_header;
    key_format_config key_format;
    key_space_mode key_space = key_space_mode::tenant;
    key_source key_from = key_source::header;
    // With json / header_or_json: RFC 6901 pointers to the string or number that is the key
    // (key_json_pointer: one; key_json_pointers: several, joined into one composite key).
    std::vector<std::string> key_json_pointers;
    // GET <client_lookup_path><key> on the client listener tells the caller what became of its key
    // in this route's scope; starts with path_prefix ("" = off).
    std::string client_lookup_path;
    reconcile_config reconcile;
};

// Limits and TTLs of one tenant (the tenant header's value), enforced across every gateway
// instance through the store. 0 = unlimited.
struct tenant_config {
    std::uint64_t max_in_flight = 0;    // reservations in flight at once
    double new_keys_per_second = 0;     // new reservations (token bucket, burst = max(1, rate))
    std::optional<duration> record_ttl; // override the route's
    std::optional<duration> lock_ttl;
    bool limited() const noexcept { return max_in_flight > 0 || new_keys_per_second > 0; }
};

struct route_config {
    std::string path_prefix;
    std::string upstream;           // name in upstreams
    std::size_t upstream_index = 0; // resolved index into config::upstreams
    idempotency_config idempotency;
    timeout_overrides timeouts;        // as written: upstream_connect, upstream_response, body_read
    route_timeouts effective_timeouts; // resolved at load (route over upstream over global)
};

struct limits_config {
    std::size_t max_request_body = 1024 * 1024;
    // An answer up to max_record_body is recorded for replay; a larger one is passed on as it
    // arrives and leaves a status-only record; one over max_response_body is refused (502) or cut.
    std::size_t max_record_body = 8 * 1024 * 1024;
    std::size_t max_response_body = std::size_t{1024} * 1024 * 1024;
    std::size_t max_header_bytes = 16 * 1024; // 431 above it
    // An upstream answer's head above it cannot be read: 502, and the answer is an outcome by
    // its status line (a status-only record under on_status: record).
    std::size_t max_response_header_bytes = 64 * 1024;
    std::size_t max_connections = 10000; // client connections, all threads
    std::size_t max_waiting = 10000;     // duplicates waiting at once (wait mode); 503 beyond
};

// How the access log is written: per-thread batches, handed to one writer thread
// through a bounded queue. `access_log:` takes `true`/`false` or a map with `enabled` and these.
struct access_log_config {
    std::size_t queue_lines = 65536;     // lines waiting for the writer; beyond, lines are dropped
    std::size_t batch_bytes = 64 * 1024; // a thread's batch is handed over at this size ...
    duration flush_interval{100};        // ... or this long after its first line
    std::string path;                    // "" = stdout; else a file opened for append, reopened on SIGUSR1
};

// HTTP/2 to clients: offered by ALPN on the TLS listener (h2 before http/1.1) while enabled; on
// a plain listener only with prior knowledge (the connection preface) and cleartext: true.
// Connection settings apply to connections accepted after a reload; request limits are
// limits.* and timeouts.* as for HTTP/1.1, per stream.
struct http2_config {
    bool enabled = true;
    bool cleartext = false;
    std::uint32_t max_concurrent_streams = 128;
    std::size_t initial_window_size = 256 * 1024;
    std::size_t max_frame_size = 16 * 1024;
    std::size_t max_header_list_size = 32 * 1024; // also bounded by limits.max_header_bytes
    duration idle_timeout{60000};
};

// OpenTelemetry traces exported over OTLP/HTTP (JSON). Off while otlp_endpoint is empty.
// The file's keys win over the OpenTelemetry SDK environment variables (OTEL_EXPORTER_OTLP_*,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED), which win over the defaults;
// the loader resolves them into these members.
struct tracing_config {
    std::string otlp_endpoint;  // http[s]://host:port/v1/traces
    double sample_ratio = 0.01; // requests without a sampled parent; a parent's decision is kept
    std::string service_name = "idemgate";
    std::string headers_env; // env var with extra export headers: "Name=value,Name2=value2"
    std::vector<std::pair<std::string, std::string>> headers; // resolved from headers_env
    std::size_t queue_spans = 8192;                           // spans waiting for export; beyond, dropped
    bool record_tenant = false;                               // idemgate.tenant on server spans
    client_tls_config tls; // an https:// endpoint: on, with these files and policy
    // From OTEL_RESOURCE_ATTRIBUTES (percent-decoded; service.name is service_name's business).
    std::vector<std::pair<std::string, std::string>> resource_attributes;
    std::vector<std::string> environment_warnings; // environment values not used, and why
    bool enabled() const noexcept { return !otlp_endpoint.empty(); }
};

// The least severe application log line written (access lines are governed by access_log).
BOOST_DEFINE_ENUM_CLASS(log_severity, debug, info, warn, error);

// Where the gateway's own paths live on the client listener: its published contract, and the
// pages documenting its problem types (when problems.base_uri is "").
inline constexpr std::string_view well_known_path = "/.well-known/idempotency";
inline constexpr std::string_view default_problem_base = "/.well-known/idempotency/problems/";

// The `type` of the gateway's problem documents (RFC 9457): <base_uri><type>.
struct problems_config {
    std::string base_uri; // "" = the relative reference default_problem_base (pages the gateway serves)
    std::string_view type_base() const noexcept
    {
        return base_uri.empty() ? default_problem_base : std::string_view(base_uri);
    }
};

// What /readyz says about the store. required: every store condition (unreachable, refusing
// writes, evicting without allow_eviction, full, a command refused) makes the gateway not ready.
// ignore: /readyz stays 200 whatever the store's state (new keys still get the store's 503).
BOOST_DEFINE_ENUM_CLASS(store_readiness, required, ignore);

struct readiness_config {
    store_readiness store = store_readiness::required;
};

struct config {
    endpoint listen{"127.0.0.1", 8080};
    listen_proxy_config listen_proxy; // listen.trusted_proxies, listen.proxy_protocol
    endpoint admin_listen{"127.0.0.1", 8079};
    unsigned threads = 0;   // I/O threads; 0 = one per core
    bool access_log = true; // one JSON line per request on stdout
    access_log_config access_log_options;
    log_severity log_level = log_severity::info;
    // Request IDs: kept from the client when valid, else generated; forwarded
    // upstream, returned on every answer, logged. "" = off.
    std::string request_id_header = "X-Request-Id";
    store_config store;
    std::optional<listen_tls_config> tls; // absent = plain HTTP on `listen`
    http2_config http2;
    tracing_config tracing;
    problems_config problems;
    readiness_config readiness;
    std::vector<upstream_config> upstreams;
    std::vector<route_config> routes;
    limits_config limits;
    timeouts_config timeouts;
    admin_config admin;
    // Keyed by tenant; the entry "default" applies to every tenant without its own.
    std::map<std::string, tenant_config, std::less<>> tenants;

    // The tenant's entry, else "default", else nullptr (no limits, the route's TTLs).
    const tenant_config* find_tenant(std::string_view tenant) const;
};

// Thrown by load/parse with every problem found, one per line, each naming the key path,
// e.g. `routes[0].idempotency.record_ttl: "24x" is not a duration`.
// Where in the file a problem's key is (1-based); line 0 when it came from no node of the file.
struct text_position {
    int line = 0;
    int column = 0;
};

class config_error : public std::runtime_error {
public:
    explicit config_error(std::vector<std::string> problems, std::vector<text_position> positions = {});
    const std::vector<std::string>& problems() const noexcept { return problems_; }
    // One per problem (line 0 where unknown), for messages such as `file:12:5: <problem>`.
    const std::vector<text_position>& positions() const noexcept { return positions_; }

private:
    std::vector<std::string> problems_;
    std::vector<text_position> positions_;
};

// Where each problem's key path (the text before its first ": ") is in `yaml_text` (the key, or
// its nearest written parent); line 0 where it names no key of the file.
std::vector<text_position> locate_problems(std::string_view yaml_text,
                                           const std::vector<std::string>& problems);
// Every problem as start-up, --check and a reload report it: "FILE:LINE:COLUMN: <problem>" where
// its position is known (from `positions`, else looked up in `yaml_text`), else as it is.
std::vector<std::string> located_problems(const std::string& file, std::string_view yaml_text,
                                          const std::vector<std::string>& problems,
                                          std::vector<text_position> positions = {});

// Parses YAML text. `getenv` resolves secrets (redis.password_env); injectable for tests.
config parse(std::string_view yaml_text, const char* (*getenv_fn)(const char*) = nullptr);

// The effective configuration as YAML: every key with its value after defaults, secrets as the
// environment variables they come from (never their values). Parsing it gives the same
// configuration (idemgate --print-config).
std::string print_config(const config& c);

// One key the loader accepts: its path, with <name> for a name the operator chooses, <status>
// for an on_status entry and [] for a list's items ("routes[].idempotency.lock_ttl"), and
// whether a reload applies it or it needs a restart.
struct key_description {
    std::string path;
    bool restart_only = false;
};
// Every key, in the order --print-config writes them (idemgate --print-keys).
std::vector<key_description> describe_keys();

// Reads and parses a file; a missing/unreadable file is a config_error naming the path.
config load_file(const std::string& path);
// The bytes of a file (config_error naming the path if unreadable).
std::string read_file(const std::string& path);
// parse() of text read from `path` (problems are reported under that name).
config load_text(const std::string& text, const std::string& path);
// The top-level `keys` whose YAML differs between two documents (reload: the settings that
// need a restart). Formatting and comments do not count as changes.
// `reloadable_parts` ("store.refusal") are left out of the comparison: keys a reload applies
// although their section needs a restart.
std::vector<std::string> changed_sections(const std::string& old_text, const std::string& new_text,
                                          const std::vector<std::string>& keys,
                                          const std::vector<std::string>& reloadable_parts = {});

// The NAME=value lines of an environment file as systemd's EnvironmentFile= reads them (blank
// lines and lines starting with '#' or ';' skipped, values optionally in single or double quotes,
// a trailing backslash joining the next line), in order; config_error naming FILE:LINE otherwise.
// `file` names the file in messages (idemgate --env-file).
std::vector<std::pair<std::string, std::string>> parse_env_file(std::string_view text,
                                                                const std::string& file);

// Valid but risky settings, one message per line naming the key path. A guarded route whose
// lock_ttl is not comfortably above 2 x upstream_connect + upstream_response + 1 s of its own
// effective timeouts (a retried connect, the exchange, and the store round trips) can let its
// lock expire while the first request still runs, and a duplicate would then execute too. What a
// store backend warns about its own section is its row's (store::backend_warnings).
std::vector<std::string> warnings(const config& cfg);

// "250ms", "30s", "5m", "24h", "7d" -> duration; nullopt if malformed, negative or overflowing.
std::optional<duration> parse_duration(std::string_view text);

// "512B", "16KiB", "1MiB", "1GiB", or a plain number of bytes -> bytes; nullopt if malformed.
std::optional<std::size_t> parse_size(std::string_view text);

// "host:port" with port 0..65535; nullopt if malformed.
std::optional<endpoint> parse_endpoint(std::string_view text);

} // namespace idemgate::config
