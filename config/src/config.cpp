#include "idemgate/config/config.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <utility>
#include <yaml-cpp/yaml.h>

namespace idemgate::config {

namespace {

std::string join_lines(const std::vector<std::string>& lines)
{
    std::string out;
    for (const auto& line : lines) {
        if (!out.empty())
            out += '\n';
        out += line;
    }
    return out;
}

} // namespace

config_error::config_error(std::vector<std::string> problems)
    : std::runtime_error(join_lines(problems)), problems_(std::move(problems))
{
}

namespace detail {
namespace {

// Strict unsigned decimal: digits only, no sign, no spaces, no 0x. Overflow is an error.
std::optional<std::uint64_t> parse_decimal(std::string_view text)
{
    if (text.empty())
        return std::nullopt;
    std::uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc{} || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

// Splits "250ms" into "250" and "ms"; the number part must be non-empty digits.
std::optional<std::pair<std::string_view, std::string_view>> split_number_unit(std::string_view text)
{
    std::size_t i = 0;
    while (i < text.size() && is_digit(text[i]))
        ++i;
    if (i == 0)
        return std::nullopt;
    return std::pair{text.substr(0, i), text.substr(i)};
}

// RFC 9110 5.6.2 tchar: the characters allowed in a method and a header field name.
bool is_tchar(char c)
{
    constexpr std::string_view symbols = "!#$%&'*+-.^_`|~";
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
           symbols.find(c) != std::string_view::npos;
}

// A tenant name: 1 to 255 bytes without control characters. A header tenant is visible ASCII
// (the gateway checks that on each request); one from a client certificate's common name
// (tenant_from: client_cert) may also have spaces and UTF-8.
bool is_tenant_name(std::string_view text)
{
    if (text.empty() || text.size() > 255)
        return false;
    return std::none_of(text.begin(), text.end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

// "200", "0.5": a finite number >= 0 written in plain decimal.
std::optional<double> parse_rate(std::string_view text)
{
    if (text.empty() || !(is_digit(text.front())))
        return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, std::chars_format::fixed);
    if (ec != std::errc{} || end != text.data() + text.size() || !(value >= 0) || value > 1e9)
        return std::nullopt;
    return value;
}

bool is_token(std::string_view text)
{
    if (text.empty())
        return false;
    for (char c : text)
        if (!is_tchar(c))
            return false;
    return true;
}

bool is_host_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-' || c == '.' ||
           c == '_';
}

bool is_ipv6_char(char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == ':' || c == '.' ||
           c == '%';
}

// parse_endpoint with the reason for a refusal, so a config problem can say what is wrong.
struct endpoint_check {
    std::optional<endpoint> value;
    std::string problem;
};

endpoint_check check_endpoint(std::string_view text)
{
    auto quoted = "\"" + std::string(text) + "\"";
    auto malformed = endpoint_check{std::nullopt, quoted + " is not an endpoint (use host:port)"};

    std::string host;
    std::string_view port_text;
    if (!text.empty() && text.front() == '[') {
        // Bracketed IPv6 literal (RFC 3986 3.2.2); stored without brackets, as resolvers want it.
        auto close = text.find(']');
        if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':')
            return malformed;
        auto inside = text.substr(1, close - 1);
        if (inside.empty() || inside.find(':') == std::string_view::npos)
            return malformed;
        for (char c : inside)
            if (!is_ipv6_char(c))
                return malformed;
        host = std::string(inside);
        port_text = text.substr(close + 2);
    } else {
        auto colon = text.rfind(':');
        if (colon == std::string_view::npos || colon == 0)
            return malformed;
        auto host_text = text.substr(0, colon);
        if (host_text.find(':') != std::string_view::npos)
            return {std::nullopt, quoted + " is not an endpoint (write an IPv6 address as [addr]:port)"};
        for (char c : host_text)
            if (!is_host_name_char(c))
                return malformed;
        host = std::string(host_text);
        port_text = text.substr(colon + 1);
    }

    if (port_text.empty())
        return malformed;
    for (char c : port_text)
        if (!is_digit(c))
            return {std::nullopt, quoted + " is not an endpoint (the port must be a decimal number)"};
    auto port = parse_decimal(port_text);
    if (!port || *port > 65535)
        return {std::nullopt, "port " + std::string(port_text) + " out of range (0-65535)"};
    return {endpoint{std::move(host), static_cast<std::uint16_t>(*port)}, {}};
}

} // namespace
} // namespace detail

std::optional<duration> parse_duration(std::string_view text)
{
    auto parts = detail::split_number_unit(text);
    if (!parts)
        return std::nullopt;
    auto [number, unit] = *parts;

    std::uint64_t factor = 0;
    if (unit == "ms")
        factor = 1;
    else if (unit == "s")
        factor = 1000;
    else if (unit == "m")
        factor = 60 * 1000;
    else if (unit == "h")
        factor = 3600 * 1000;
    else if (unit == "d")
        factor = 24ULL * 3600 * 1000;
    else
        return std::nullopt;

    auto value = detail::parse_decimal(number);
    constexpr auto max_ms = static_cast<std::uint64_t>(std::numeric_limits<duration::rep>::max());
    if (!value || *value > max_ms / factor)
        return std::nullopt;
    return duration{static_cast<duration::rep>(*value * factor)};
}

std::optional<std::size_t> parse_size(std::string_view text)
{
    auto parts = detail::split_number_unit(text);
    if (!parts)
        return std::nullopt;
    auto [number, unit] = *parts;

    std::uint64_t factor = 0;
    if (unit.empty() || unit == "B")
        factor = 1;
    else if (unit == "KiB")
        factor = 1024;
    else if (unit == "MiB")
        factor = 1024 * 1024;
    else if (unit == "GiB")
        factor = 1024 * 1024 * 1024;
    else
        return std::nullopt;

    auto value = detail::parse_decimal(number);
    constexpr auto max_bytes = static_cast<std::uint64_t>(std::numeric_limits<std::size_t>::max());
    if (!value || *value > max_bytes / factor)
        return std::nullopt;
    return static_cast<std::size_t>(*value * factor);
}

std::optional<endpoint> parse_endpoint(std::string_view text)
{
    return detail::check_endpoint(text).value;
}

namespace detail {
namespace {

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
    return "\"" + std::string(text) + "\"";
}

std::string child_path(const std::string& parent, std::string_view key)
{
    return parent.empty() ? std::string(key) : parent + "." + std::string(key);
}

// Walks the YAML tree once, filling the config and collecting every problem on the way, so the
// operator fixes a file in one round instead of one error per start (issue 2: config messages).
class loader {
public:
    loader(std::string source, const char* (*getenv_fn)(const char*))
        : source_(std::move(source)), getenv_(getenv_fn)
    {
    }

    std::vector<std::string>& problems() { return problems_; }

    void problem(const std::string& path, const std::string& message)
    {
        problems_.push_back((path.empty() ? source_ : path) + ": " + message);
    }

    // The entries of one YAML map, checked against the keys this level knows.
    class map_view {
    public:
        map_view(loader& owner, const YAML::Node& node, std::string path,
                 std::initializer_list<std::string_view> known)
            : path_(std::move(path))
        {
            if (!node.IsDefined() || node.IsNull())
                return; // `store:` with every child commented out: all defaults.
            if (!node.IsMap()) {
                owner.problem(path_, std::string("expected a map, got ") + kind_name(node));
                return;
            }
            for (const auto& entry : node) {
                if (!entry.first.IsScalar()) {
                    owner.problem(path_, "keys must be plain names");
                    continue;
                }
                const auto& key = entry.first.Scalar();
                auto key_path = child_path(path_, key);
                if (find(key)) {
                    owner.problem(key_path, "duplicate key");
                    continue;
                }
                bool is_known = known.size() == 0;
                for (auto k : known)
                    is_known = is_known || k == key;
                if (!is_known) {
                    owner.problem(key_path, "unknown key");
                    continue;
                }
                entries_.emplace_back(key, entry.second);
            }
        }

        const std::string& path() const { return path_; }
        std::string path_of(std::string_view key) const { return child_path(path_, key); }
        const std::vector<std::pair<std::string, YAML::Node>>& entries() const { return entries_; }

        const YAML::Node* find(std::string_view key) const
        {
            for (const auto& [k, v] : entries_)
                if (k == key)
                    return &v;
            return nullptr;
        }

    private:
        std::string path_;
        std::vector<std::pair<std::string, YAML::Node>> entries_;
    };

    // The scalar text at `key`, or nullopt (absent, or wrong type, which is then a problem).
    std::optional<std::string> scalar(const map_view& map, std::string_view key, const char* expected)
    {
        const auto* node = map.find(key);
        if (!node)
            return std::nullopt;
        return scalar(*node, map.path_of(key), expected);
    }

    std::optional<std::string> scalar(const YAML::Node& node, const std::string& path, const char* expected)
    {
        if (!node.IsScalar()) {
            problem(path, std::string("expected ") + expected + ", got " + kind_name(node));
            return std::nullopt;
        }
        return node.Scalar();
    }

    void read_string(const map_view& map, std::string_view key, std::string& out)
    {
        if (auto text = scalar(map, key, "a string"))
            out = std::move(*text);
    }

    void read_bool(const map_view& map, std::string_view key, bool& out)
    {
        auto text = scalar(map, key, "a boolean");
        if (!text)
            return;
        if (*text == "true")
            out = true;
        else if (*text == "false")
            out = false;
        else
            problem(map.path_of(key), quote(*text) + " is not a boolean (use true or false)");
    }

    template<class Int>
    void read_int(const map_view& map, std::string_view key, Int& out, std::uint64_t min, std::uint64_t max)
    {
        auto text = scalar(map, key, "an integer");
        if (!text)
            return;
        auto path = map.path_of(key);
        auto range = " out of range (" + std::to_string(min) + "-" + std::to_string(max) + ")";
        bool negative = !text->empty() && text->front() == '-';
        auto digits = std::string_view(*text).substr(negative ? 1 : 0);
        bool all_digits = !digits.empty();
        for (char c : digits)
            all_digits = all_digits && is_digit(c);
        if (!all_digits) {
            problem(path, quote(*text) + " is not an integer");
            return;
        }
        auto value = parse_decimal(digits);
        if (negative || !value || *value < min || *value > max) {
            problem(path, *text + range);
            return;
        }
        out = static_cast<Int>(*value);
    }

    void read_duration(const map_view& map, std::string_view key, duration& out, bool allow_zero = false)
    {
        auto text = scalar(map, key, "a duration");
        if (!text)
            return;
        auto value = allow_zero && *text == "0" ? std::optional<duration>(0) : parse_duration(*text);
        if (!value && !text->empty() && text->front() == '-') {
            problem(map.path_of(key), quote(*text) + " is negative (a duration is 0 or more, e.g. 30s)");
            return;
        }
        if (!value) {
            problem(map.path_of(key), quote(*text) + " is not a duration");
            return;
        }
        if (!allow_zero && value->count() == 0) {
            problem(map.path_of(key), "must be greater than 0");
            return;
        }
        out = *value;
    }

    void read_size(const map_view& map, std::string_view key, std::size_t& out, bool allow_zero = true)
    {
        auto text = scalar(map, key, "a size");
        if (!text)
            return;
        auto value = parse_size(*text);
        if (!value) {
            problem(map.path_of(key), quote(*text) + " is not a size (use B, KiB, MiB, GiB)");
            return;
        }
        if (!allow_zero && *value == 0) {
            problem(map.path_of(key), "must be greater than 0");
            return;
        }
        out = *value;
    }

    void read_endpoint(const map_view& map, std::string_view key, endpoint& out)
    {
        auto text = scalar(map, key, "an endpoint (host:port)");
        if (!text)
            return;
        auto checked = check_endpoint(*text);
        if (!checked.value) {
            problem(map.path_of(key), checked.problem);
            return;
        }
        out = std::move(*checked.value);
    }

    // A header field name, e.g. Idempotency-Key (RFC 9110 5.1: a token).
    void read_header_name(const map_view& map, std::string_view key, std::string& out, bool allow_empty)
    {
        auto text = scalar(map, key, "a header name");
        if (!text)
            return;
        if (text->empty() && allow_empty) {
            out.clear();
            return;
        }
        if (!is_token(*text)) {
            problem(map.path_of(key), quote(*text) + " is not a header name");
            return;
        }
        out = std::move(*text);
    }

    void load(const YAML::Node& root, config& cfg)
    {
        map_view top(*this, root, "",
                     {"listen", "admin_listen", "threads", "access_log", "request_id_header", "store",
                      "upstreams", "routes", "limits", "timeouts", "admin", "tenants", "tls"});
        if (root.IsDefined() && !root.IsNull() && !root.IsMap())
            return; // reported by `top`; nothing below can be read.
        read_endpoint(top, "listen", cfg.listen);
        read_endpoint(top, "admin_listen", cfg.admin_listen);
        read_int(top, "threads", cfg.threads, 0, 256);
        load_access_log(top, cfg);
        load_request_id(top, cfg);
        load_store(top, cfg.store);
        load_listen_tls(top, cfg.tls);
        load_upstreams(top, cfg.upstreams);
        load_routes(top, cfg);
        load_limits(top, cfg.limits);
        load_timeouts(top, cfg.timeouts);
        load_admin(top, cfg.admin);
        load_tenants(top, cfg.tenants);
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

private:
    static YAML::Node child(const map_view& map, std::string_view key)
    {
        const auto* node = map.find(key);
        return node ? *node : YAML::Node(YAML::NodeType::Undefined);
    }

    // `access_log: true|false`, or a map: enabled plus the writer's queue and batching.
    void load_access_log(const map_view& top, config& cfg)
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
    void load_request_id(const map_view& top, config& cfg)
    {
        read_header_name(top, "request_id_header", cfg.request_id_header, true);
    }

    void load_store(const map_view& top, store_config& store)
    {
        map_view map(*this, child(top, "store"), "store",
                     {"type", "on_failure", "redis", "memory", "key_secret_env", "hash_keys", "encryption",
                      "local_tier"});
        read_string(map, "key_secret_env", store.key_secret_env);
        if (!store.key_secret_env.empty()) {
            const char* value = getenv_(store.key_secret_env.c_str());
            if (!value)
                problem(map.path_of("key_secret_env"),
                        "environment variable " + quote(store.key_secret_env) + " is not set");
            else if (std::string_view(value).size() < 32)
                problem(map.path_of("key_secret_env"), "environment variable " + quote(store.key_secret_env) +
                                                           " must hold at least 32 bytes");
            else
                store.key_secret = value;
        }
        if (auto text = scalar(map, "type", "a string")) {
            if (*text == "memory")
                store.type = store_type::memory;
            else if (*text == "redis")
                store.type = store_type::redis;
            else
                problem(map.path_of("type"), quote(*text) + " is not a store type (use memory or redis)");
        }
        if (auto text = scalar(map, "on_failure", "a string")) {
            if (*text == "reject")
                store.on_failure = failure_mode::reject;
            else if (*text == "pass_through")
                store.on_failure = failure_mode::pass_through;
            else
                problem(map.path_of("on_failure"),
                        quote(*text) + " is not a failure mode (use reject or pass_through)");
        }
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

    void load_local_tier(const map_view& store, local_tier_config& tier)
    {
        map_view map(*this, child(store, "local_tier"), "store.local_tier", {"max_bytes", "max_age"});
        read_size(map, "max_bytes", tier.max_bytes);
        read_duration(map, "max_age", tier.max_age);
    }

    void load_encryption(const map_view& store, encryption_config& encryption)
    {
        map_view map(*this, child(store, "encryption"), "store.encryption", {"key_env", "previous_key_env"});
        read_string(map, "key_env", encryption.key_env);
        read_string(map, "previous_key_env", encryption.previous_key_env);
        encryption.key = record_key(map, "key_env", encryption.key_env);
        encryption.previous_key = record_key(map, "previous_key_env", encryption.previous_key_env);
    }

    // The 32 raw bytes of an AES-256 key held as 64 hex digits in the variable `name` names; ""
    // when `name` is empty or the variable is unusable (then a problem at `key`).
    std::string record_key(const map_view& map, std::string_view key, const std::string& name)
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

    void load_redis(const map_view& store, redis_config& redis)
    {
        // `password` is not a key: secrets come from the environment, never from the file (STYLE.md).
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
        map_view sentinel(*this, child(map, "sentinel"), "store.redis.sentinel",
                          {"master_name", "password_env"});
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
        load_redis_tls(map, redis.tls);
    }

    // Files are checked for readability here; that they hold PEM certificates and a matching key
    // is checked where OpenSSL loads them (store::check_backend_config, run by --check too).
    void load_redis_tls(const map_view& redis, redis_tls_config& tls)
    {
        map_view map(*this, child(redis, "tls"), "store.redis.tls",
                     {"enabled", "ca_file", "cert_file", "key_file", "server_name", "verify"});
        read_bool(map, "enabled", tls.enabled);
        read_string(map, "ca_file", tls.ca_file);
        read_string(map, "cert_file", tls.cert_file);
        read_string(map, "key_file", tls.key_file);
        read_string(map, "server_name", tls.server_name);
        read_bool(map, "verify", tls.verify);
        if (!tls.enabled) {
            // An error, not a warning: a file that names a CA or a client certificate says the
            // operator expects TLS, and the password would otherwise cross the network in clear.
            for (auto [key, set] :
                 {std::pair{"ca_file", !tls.ca_file.empty()}, std::pair{"cert_file", !tls.cert_file.empty()},
                  std::pair{"key_file", !tls.key_file.empty()},
                  std::pair{"server_name", !tls.server_name.empty()}, std::pair{"verify", !tls.verify}})
                if (set)
                    problem(map.path_of(key), "set while store.redis.tls.enabled is false (the connection "
                                              "would be plain TCP); set enabled: true or remove it");
            return;
        }
        if (!tls.cert_file.empty() && tls.key_file.empty())
            problem(map.path_of("cert_file"), "needs store.redis.tls.key_file (a client certificate "
                                              "is useless without its private key)");
        if (tls.cert_file.empty() && !tls.key_file.empty())
            problem(map.path_of("key_file"), "needs store.redis.tls.cert_file (the client "
                                             "certificate of this private key)");
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

    void check_readable(const std::string& path, const std::string& file)
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

    void load_upstreams(const map_view& top, std::vector<upstream_config>& upstreams)
    {
        // Names are the operator's own, so any key is allowed at this level.
        map_view names(*this, child(top, "upstreams"), "upstreams", {});
        for (const auto& [name, node] : names.entries()) {
            upstream_config upstream;
            upstream.name = name;
            map_view map(*this, node, names.path_of(name),
                         {"address", "addresses", "max_idle_connections", "balance", "resolve_every",
                          "eject_after_failures", "eject_for", "tls"});
            if (name.empty())
                problem(names.path(), "an upstream name must not be empty");
            load_upstream_addresses(map, node, upstream);
            read_int(map, "max_idle_connections", upstream.max_idle_connections, 0,
                     std::numeric_limits<std::size_t>::max());
            if (auto text = scalar(map, "balance", "a string")) {
                if (*text == "round_robin")
                    upstream.balance = balance_mode::round_robin;
                else if (*text == "least_pending")
                    upstream.balance = balance_mode::least_pending;
                else
                    problem(map.path_of("balance"),
                            quote(*text) + " is not allowed (use round_robin or least_pending)");
            }
            read_duration(map, "resolve_every", upstream.resolve_every, true);
            read_int(map, "eject_after_failures", upstream.eject_after_failures, 0, 1000);
            read_duration(map, "eject_for", upstream.eject_for);
            load_upstream_tls(map, upstream.tls);
            upstreams.push_back(std::move(upstream));
        }
    }

    // upstreams.<name>.address (one host:port, as before fleets) or .addresses (a list): exactly
    // one of them. Names are resolved by the gateway (every A/AAAA result joins the fleet).
    void load_upstream_addresses(const map_view& map, const YAML::Node& node, upstream_config& upstream)
    {
        const auto* one = map.find("address");
        const auto* list = map.find("addresses");
        if (one && list) {
            problem(map.path_of("addresses"),
                    "set together with " + map.path_of("address") + " (use one of them)");
            return;
        }
        if (!one && !list) {
            if (node.IsMap() || node.IsNull())
                problem(map.path_of("address"),
                        "required key is missing (or addresses: a list of host:port)");
            return;
        }
        if (one) {
            read_endpoint(map, "address", upstream.address);
            if (!upstream.address.host.empty())
                upstream.addresses.push_back(upstream.address);
            return;
        }
        auto path = map.path_of("addresses");
        if (!list->IsSequence()) {
            problem(path, std::string("expected a list of host:port, got ") + kind_name(*list));
            return;
        }
        if (list->size() == 0) {
            problem(path, "must list at least one address (host:port)");
            return;
        }
        if (list->size() > max_upstream_addresses) {
            problem(path, std::to_string(list->size()) + " addresses; at most " +
                              std::to_string(max_upstream_addresses) + " are allowed");
            return;
        }
        for (std::size_t i = 0; i < list->size(); ++i) {
            auto item_path = path + "[" + std::to_string(i) + "]";
            auto text = scalar((*list)[i], item_path, "an endpoint (host:port)");
            if (!text)
                continue;
            auto checked = check_endpoint(*text);
            if (!checked.value) {
                problem(item_path, checked.problem);
                continue;
            }
            bool duplicate = false;
            for (std::size_t j = 0; j < upstream.addresses.size() && !duplicate; ++j)
                duplicate = upstream.addresses[j].to_string() == checked.value->to_string();
            if (duplicate) {
                problem(item_path, quote(*text) + " is listed twice");
                continue;
            }
            upstream.addresses.push_back(std::move(*checked.value));
        }
        if (!upstream.addresses.empty())
            upstream.address = upstream.addresses.front();
    }

    // tls: TLS termination on `listen` (issue 11). Files are checked for readability here; that
    // they hold PEM certificates and a matching key is checked where OpenSSL loads them
    // (gateway::check_tls_config, run by --check and at start-up).
    void load_listen_tls(const map_view& top, std::optional<listen_tls_config>& out)
    {
        const auto* node = top.find("tls");
        if (!node)
            return;
        map_view map(*this, *node, "tls",
                     {"cert_file", "key_file", "min_version", "client_ca_file", "client_auth"});
        listen_tls_config tls;
        read_string(map, "cert_file", tls.cert_file);
        read_string(map, "key_file", tls.key_file);
        read_string(map, "client_ca_file", tls.client_ca_file);
        for (auto [key, file] :
             {std::pair{"cert_file", &tls.cert_file}, std::pair{"key_file", &tls.key_file}}) {
            if (file->empty())
                problem(map.path_of(key), map.find(key) ? "must not be empty" : "required key is missing");
            else
                check_readable(map.path_of(key), *file);
        }
        if (auto text = scalar(map, "min_version", "a TLS version")) {
            if (*text == "1.2")
                tls.min_version = 0x0303;
            else if (*text == "1.3")
                tls.min_version = 0x0304;
            else
                problem(map.path_of("min_version"),
                        quote(*text) + " is not allowed (use \"1.2\" or \"1.3\")");
        }
        if (auto text = scalar(map, "client_auth", "a string")) {
            if (*text == "none")
                tls.client_auth = client_auth_mode::none;
            else if (*text == "optional")
                tls.client_auth = client_auth_mode::optional;
            else if (*text == "required")
                tls.client_auth = client_auth_mode::required;
            else
                problem(map.path_of("client_auth"),
                        quote(*text) + " is not allowed (use none, optional or required)");
        }
        if (tls.client_auth != client_auth_mode::none && tls.client_ca_file.empty())
            problem(map.path_of("client_auth"),
                    "needs tls.client_ca_file (the CA client certificates are verified against)");
        if (tls.client_auth == client_auth_mode::none && !tls.client_ca_file.empty())
            problem(map.path_of("client_ca_file"), "set while tls.client_auth is none (no client certificate "
                                                   "is asked for); set client_auth: optional or required, "
                                                   "or remove it");
        if (!tls.client_ca_file.empty())
            check_readable(map.path_of("client_ca_file"), tls.client_ca_file);
        out = std::move(tls);
    }

    // upstreams.<name>.tls: HTTPS to the upstream (issue 11), checked like store.redis.tls.
    void load_upstream_tls(const map_view& upstream, upstream_tls_config& tls)
    {
        map_view map(*this, child(upstream, "tls"), upstream.path_of("tls"),
                     {"enabled", "ca_file", "server_name", "cert_file", "key_file", "verify"});
        read_bool(map, "enabled", tls.enabled);
        read_string(map, "ca_file", tls.ca_file);
        read_string(map, "server_name", tls.server_name);
        read_string(map, "cert_file", tls.cert_file);
        read_string(map, "key_file", tls.key_file);
        read_bool(map, "verify", tls.verify);
        auto enabled_path = map.path_of("enabled");
        if (!tls.enabled) {
            for (auto [key, set] :
                 {std::pair{"ca_file", !tls.ca_file.empty()}, std::pair{"cert_file", !tls.cert_file.empty()},
                  std::pair{"key_file", !tls.key_file.empty()},
                  std::pair{"server_name", !tls.server_name.empty()}, std::pair{"verify", !tls.verify}})
                if (set)
                    problem(map.path_of(key), "set while " + enabled_path +
                                                  " is false (the connection would be plain HTTP); set "
                                                  "enabled: true or remove it");
            return;
        }
        if (!tls.cert_file.empty() && tls.key_file.empty())
            problem(map.path_of("cert_file"),
                    "needs " + map.path_of("key_file") +
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

    void load_routes(const map_view& top, config& cfg)
    {
        auto node = child(top, "routes");
        if (node.IsDefined() && !node.IsNull() && !node.IsSequence()) {
            problem("routes", std::string("expected a list, got ") + kind_name(node));
            return;
        }
        if (!node.IsDefined() || node.IsNull() || node.size() == 0) {
            problem("routes", "at least one route is required");
            return;
        }
        if (cfg.upstreams.empty())
            problem("upstreams", "at least one upstream is required");

        for (std::size_t i = 0; i < node.size(); ++i) {
            auto path = "routes[" + std::to_string(i) + "]";
            route_config route;
            map_view map(*this, node[i], path, {"path_prefix", "upstream", "idempotency"});
            if (!node[i].IsMap() && !node[i].IsNull())
                continue; // already reported as the wrong type

            if (auto text = scalar(map, "path_prefix", "a string")) {
                if (text->empty() || text->front() != '/')
                    problem(map.path_of("path_prefix"), quote(*text) + " must start with '/'");
                else
                    route.path_prefix = std::move(*text);
            } else if (!map.find("path_prefix")) {
                problem(map.path_of("path_prefix"), "required key is missing");
            }

            if (auto text = scalar(map, "upstream", "a string")) {
                route.upstream = std::move(*text);
                bool found = false;
                for (std::size_t u = 0; u < cfg.upstreams.size() && !found; ++u) {
                    if (cfg.upstreams[u].name == route.upstream) {
                        route.upstream_index = u;
                        found = true;
                    }
                }
                if (!found)
                    problem(map.path_of("upstream"), "unknown upstream " + quote(route.upstream));
            } else if (!map.find("upstream")) {
                problem(map.path_of("upstream"), "required key is missing");
            }

            if (const auto* idempotency = map.find("idempotency"))
                load_idempotency(*idempotency, map.path_of("idempotency"), route.idempotency);
            cfg.routes.push_back(std::move(route));
        }
    }

    void load_idempotency(const YAML::Node& node, const std::string& path, idempotency_config& idem)
    {
        map_view map(*this, node, path,
                     {"methods", "key_header", "required", "lock_ttl", "record_ttl", "tenant_header",
                      "tenant_from", "mismatch_status", "credential_headers", "fingerprint", "mode",
                      "expose_expiry", "on_unknown_outcome", "on_in_flight", "wait_timeout"});
        idem.enabled = true;

        if (const auto* methods = map.find("methods"))
            load_methods(*methods, map.path_of("methods"), idem.methods);
        read_header_name(map, "key_header", idem.key_header, false);
        read_bool(map, "required", idem.required);
        read_duration(map, "lock_ttl", idem.lock_ttl);
        read_duration(map, "record_ttl", idem.record_ttl);
        read_header_name(map, "tenant_header", idem.tenant_header, true);
        if (auto text = scalar(map, "tenant_from", "a string")) {
            if (*text == "header") {
                idem.tenant_from = tenant_source::header;
            } else if (*text == "client_cert") {
                idem.tenant_from = tenant_source::client_cert;
                if (!idem.tenant_header.empty())
                    problem(map.path_of("tenant_from"),
                            "client_cert takes the tenant from the client certificate; remove tenant_header");
            } else {
                problem(map.path_of("tenant_from"),
                        quote(*text) + " is not allowed (use header or client_cert)");
            }
        }

        if (const auto* list = map.find("credential_headers"))
            load_header_list(*list, map.path_of("credential_headers"), idem.credential_headers);
        if (const auto* fp = map.find("fingerprint"))
            load_fingerprint(*fp, map.path_of("fingerprint"), idem.fingerprint);
        if (auto text = scalar(map, "mode", "a string")) {
            if (*text == "enforce")
                idem.mode = route_mode::enforce;
            else if (*text == "shadow")
                idem.mode = route_mode::shadow;
            else
                problem(map.path_of("mode"), quote(*text) + " is not a mode (use enforce or shadow)");
        }
        read_bool(map, "expose_expiry", idem.expose_expiry);
        if (auto text = scalar(map, "on_unknown_outcome", "a string")) {
            if (*text == "release")
                idem.on_unknown_outcome = unknown_outcome_mode::release;
            else if (*text == "hold")
                idem.on_unknown_outcome = unknown_outcome_mode::hold;
            else
                problem(map.path_of("on_unknown_outcome"),
                        quote(*text) + " is not allowed (use release or hold)");
        }
        if (auto text = scalar(map, "on_in_flight", "a string")) {
            if (*text == "reject")
                idem.on_in_flight = in_flight_mode::reject;
            else if (*text == "wait")
                idem.on_in_flight = in_flight_mode::wait;
            else
                problem(map.path_of("on_in_flight"), quote(*text) + " is not allowed (use reject or wait)");
        }
        read_duration(map, "wait_timeout", idem.wait_timeout);

        if (auto text = scalar(map, "mismatch_status", "an integer")) {
            if (*text == "409")
                idem.mismatch_status = 409;
            else if (*text == "422")
                idem.mismatch_status = 422;
            else
                problem(map.path_of("mismatch_status"),
                        (parse_decimal(*text) ? *text : quote(*text)) + " is not allowed (use 409 or 422)");
        }
    }

    void load_fingerprint(const YAML::Node& node, const std::string& path, fingerprint_config& fp)
    {
        map_view map(*this, node, path, {"query", "headers", "json", "ignore_json_fields"});
        read_bool(map, "query", fp.query);
        if (const auto* list = map.find("headers"))
            load_header_list(*list, map.path_of("headers"), fp.headers);
        if (auto text = scalar(map, "json", "a string")) {
            if (*text == "raw")
                fp.json = json_mode::raw;
            else if (*text == "canonical")
                fp.json = json_mode::canonical;
            else
                problem(map.path_of("json"), quote(*text) + " is not a JSON mode (use raw or canonical)");
        }
        if (const auto* list = map.find("ignore_json_fields")) {
            auto list_path = map.path_of("ignore_json_fields");
            if (!list->IsSequence()) {
                problem(list_path, std::string("expected a list, got ") + kind_name(*list));
                return;
            }
            for (std::size_t i = 0; i < list->size(); ++i) {
                auto item_path = list_path + "[" + std::to_string(i) + "]";
                auto text = scalar((*list)[i], item_path, "a JSON Pointer");
                if (!text)
                    continue;
                // RFC 6901: "" (the whole document) is not a field; every other pointer starts with
                // '/', and '~' is only followed by 0 or 1.
                bool ok = !text->empty() && text->front() == '/';
                for (std::size_t k = 0; ok && k < text->size(); ++k)
                    if ((*text)[k] == '~')
                        ok = k + 1 < text->size() && ((*text)[k + 1] == '0' || (*text)[k + 1] == '1');
                if (!ok)
                    problem(item_path,
                            quote(*text) + " is not a JSON Pointer to a field (e.g. \"/client_sent_at\")");
                else
                    fp.ignore_json_fields.push_back(std::move(*text));
            }
            if (!fp.ignore_json_fields.empty())
                fp.json = json_mode::canonical;
        }
    }

    // A list of header names (RFC 9110 tokens), without duplicates (case-insensitive).
    void load_header_list(const YAML::Node& node, const std::string& path, std::vector<std::string>& out)
    {
        if (node.IsNull())
            return;
        if (!node.IsSequence()) {
            problem(path, std::string("expected a list, got ") + kind_name(node));
            return;
        }
        for (std::size_t i = 0; i < node.size(); ++i) {
            auto item_path = path + "[" + std::to_string(i) + "]";
            auto text = scalar(node[i], item_path, "a header name");
            if (!text)
                continue;
            if (!is_token(*text)) {
                problem(item_path, quote(*text) + " is not a header name");
                continue;
            }
            bool seen = false;
            for (const auto& h : out)
                seen = seen || lower_ascii(h) == lower_ascii(*text);
            if (seen)
                problem(item_path, quote(*text) + " is listed twice");
            else
                out.push_back(std::move(*text));
        }
    }

    static std::string lower_ascii(std::string_view text)
    {
        std::string out(text);
        for (auto& c : out)
            if (c >= 'A' && c <= 'Z')
                c = static_cast<char>(c - 'A' + 'a');
        return out;
    }

    void load_methods(const YAML::Node& node, const std::string& path, std::vector<std::string>& out)
    {
        if (!node.IsNull() && !node.IsSequence()) {
            problem(path, std::string("expected a list, got ") + kind_name(node));
            return;
        }
        if (node.IsNull() || node.size() == 0) {
            problem(path, "must not be empty");
            return;
        }
        std::vector<std::string> methods;
        bool ok = true;
        for (std::size_t i = 0; i < node.size(); ++i) {
            auto item_path = path + "[" + std::to_string(i) + "]";
            auto text = scalar(node[i], item_path, "an HTTP method");
            if (!text) {
                ok = false;
                continue;
            }
            if (!is_token(*text)) {
                problem(item_path, quote(*text) + " is not an HTTP method");
                ok = false;
                continue;
            }
            // Method names are case-sensitive on the wire (RFC 9110 9.1), but every standard one is
            // upper case and a lower-case entry in the file is a typo, not a custom method.
            for (auto& c : *text)
                if (c >= 'a' && c <= 'z')
                    c = static_cast<char>(c - 'a' + 'A');
            bool seen = false;
            for (const auto& m : methods)
                seen = seen || m == *text;
            if (!seen)
                methods.push_back(std::move(*text));
        }
        if (ok)
            out = std::move(methods);
    }

    void load_limits(const map_view& top, limits_config& limits)
    {
        map_view map(
            *this, child(top, "limits"), "limits",
            {"max_request_body", "max_response_body", "max_header_bytes", "max_connections", "max_waiting"});
        read_size(map, "max_request_body", limits.max_request_body);
        read_size(map, "max_response_body", limits.max_response_body);
        read_size(map, "max_header_bytes", limits.max_header_bytes, false);
        read_int(map, "max_connections", limits.max_connections, 1, std::numeric_limits<std::size_t>::max());
        read_int(map, "max_waiting", limits.max_waiting, 0, std::numeric_limits<std::size_t>::max());
    }

    // tenants: { <tenant>: { max_in_flight, new_keys_per_second, record_ttl, lock_ttl } }
    void load_tenants(const map_view& top, std::map<std::string, tenant_config, std::less<>>& tenants)
    {
        map_view all(*this, child(top, "tenants"), "tenants", {});
        for (const auto& [name, node] : all.entries()) {
            auto path = all.path_of(name);
            if (name != "default" && !detail::is_tenant_name(name)) {
                problem(path, "a tenant is 1 to 255 characters without control characters (visible ASCII in "
                              "a tenant header; a certificate's common name may have spaces)");
                continue;
            }
            map_view map(*this, node, path,
                         {"max_in_flight", "new_keys_per_second", "record_ttl", "lock_ttl"});
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

    void load_admin(const map_view& top, admin_config& admin)
    {
        map_view map(*this, child(top, "admin"), "admin", {"token_env"});
        read_string(map, "token_env", admin.token_env);
        if (admin.token_env.empty())
            return;
        const char* value = getenv_(admin.token_env.c_str());
        if (!value || !*value)
            problem(map.path_of("token_env"),
                    "environment variable " + quote(admin.token_env) + " is not set");
        else if (std::string_view(value).size() < 16)
            problem(map.path_of("token_env"),
                    "environment variable " + quote(admin.token_env) + " must hold at least 16 bytes");
        else
            admin.token = value;
    }

    void load_timeouts(const map_view& top, timeouts_config& timeouts)
    {
        map_view map(*this, child(top, "timeouts"), "timeouts",
                     {"header_read", "body_read", "idle", "client_write", "upstream_connect",
                      "upstream_response", "drain"});
        read_duration(map, "header_read", timeouts.header_read);
        read_duration(map, "body_read", timeouts.body_read);
        read_duration(map, "idle", timeouts.idle);
        read_duration(map, "client_write", timeouts.client_write);
        read_duration(map, "upstream_connect", timeouts.upstream_connect);
        read_duration(map, "upstream_response", timeouts.upstream_response);
        read_duration(map, "drain", timeouts.drain, true); // 0 = stop at once on SIGTERM
    }

    std::string source_; // names the whole document when a problem has no key path
    const char* (*getenv_)(const char*);
    std::vector<std::string> problems_;
};

const char* system_getenv(const char* name)
{
    return std::getenv(name);
}

// `source` names where the text came from (a file path, or "config") in syntax errors.
config parse_named(std::string_view yaml_text, const std::string& source,
                   const char* (*getenv_fn)(const char*))
{
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml_text));
    } catch (const YAML::Exception& e) {
        std::string message = source + ": YAML syntax error";
        if (!e.mark.is_null())
            message += " at line " + std::to_string(e.mark.line + 1) + ", column " +
                       std::to_string(e.mark.column + 1);
        throw config_error({message + ": " + e.msg});
    }

    loader load(source, getenv_fn ? getenv_fn : &system_getenv);
    config cfg;
    load.load(root, cfg);
    if (!load.problems().empty())
        throw config_error(std::move(load.problems()));
    return cfg;
}

} // namespace
} // namespace detail

config parse(std::string_view yaml_text, const char* (*getenv_fn)(const char*))
{
    return detail::parse_named(yaml_text, "config", getenv_fn);
}

std::string read_file(const std::string& path)
{
    // stdio rather than ifstream: a directory opens fine and only fread reports EISDIR, which
    // a streambuf copy would swallow into an empty (and so misleading) document.
    std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
    std::string text;
    bool ok = file != nullptr;
    while (ok) {
        char chunk[4096];
        auto n = std::fread(chunk, 1, sizeof chunk, file.get());
        text.append(chunk, n);
        if (n < sizeof chunk) {
            ok = !std::ferror(file.get());
            break;
        }
    }
    if (!ok)
        throw config_error({path + ": cannot read file"});
    return text;
}

config load_file(const std::string& path)
{
    return detail::parse_named(read_file(path), path, nullptr);
}

config load_text(const std::string& text, const std::string& path)
{
    return detail::parse_named(text, path, nullptr);
}

std::vector<std::string> changed_sections(const std::string& old_text, const std::string& new_text,
                                          const std::vector<std::string>& keys)
{
    std::vector<std::string> out;
    YAML::Node before, after;
    try {
        before = YAML::Load(old_text);
        after = YAML::Load(new_text);
    } catch (const YAML::Exception&) {
        return keys; // unreadable: treat every section as changed (the caller parsed both already)
    }
    auto text_of = [](const YAML::Node& doc, const std::string& key) {
        if (!doc.IsMap() || !doc[key])
            return std::string();
        YAML::Emitter e;
        e << doc[key];
        return std::string(e.c_str());
    };
    for (const auto& k : keys)
        if (text_of(before, k) != text_of(after, k))
            out.push_back(k);
    return out;
}

std::string fingerprint_config::describe() const
{
    // Today's defaults describe as "": fingerprints made before these options existed still match.
    if (query && headers.empty() && json == json_mode::raw)
        return {};
    std::string out = "fp2";
    out += query ? ";q" : ";noq";
    for (const auto& h : headers) {
        out += ";h=";
        for (char c : h)
            out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c);
    }
    if (json == json_mode::canonical)
        out += ";json";
    for (const auto& p : ignore_json_fields)
        out += ";ignore=" + p;
    return out;
}

const tenant_config* config::find_tenant(std::string_view tenant) const
{
    if (tenants.empty())
        return nullptr;
    if (auto it = tenants.find(tenant); it != tenants.end())
        return &it->second;
    if (auto it = tenants.find(std::string_view("default")); it != tenants.end())
        return &it->second;
    return nullptr;
}

std::vector<std::string> warnings(const config& cfg)
{
    std::vector<std::string> out;
    // The memory store keeps decoded records inside this process (no dump, no replica, no
    // network), so neither option is applied to it; say so rather than accept them silently.
    if (cfg.store.type == store_type::memory && cfg.store.encryption.enabled())
        out.push_back("store.encryption: the memory store does not encrypt records (they never leave this "
                      "process); encryption applies to store.type: redis");
    if (cfg.store.type == store_type::memory && cfg.store.hash_keys)
        out.push_back("store.hash_keys: the memory store does not hash keys (they never leave this process); "
                      "hash_keys applies to store.type: redis");
    if (cfg.store.type == store_type::redis && cfg.store.redis.tls.enabled && !cfg.store.redis.tls.verify)
        out.push_back("store.redis.tls.verify: false: the Redis server's certificate and name are not "
                      "checked, so anyone on the network path can impersonate it (for testing only)");
    for (const auto& up : cfg.upstreams)
        if (up.tls.enabled && !up.tls.verify)
            out.push_back(
                "upstreams." + up.name +
                ".tls.verify: false: the upstream's certificate and name are not checked, so anyone "
                "on the network path can impersonate it (for testing only)");
    const auto& t = cfg.timeouts;
    auto needed = 2 * t.upstream_connect + t.upstream_response + duration(1000);
    for (const auto& [name, tenant] : cfg.tenants) {
        if (!tenant.lock_ttl || *tenant.lock_ttl >= needed)
            continue;
        out.push_back("tenants." + name + ".lock_ttl: " + std::to_string(tenant.lock_ttl->count()) +
                      "ms is not above 2 x timeouts.upstream_connect + timeouts.upstream_response + 1s (" +
                      std::to_string(needed.count()) +
                      "ms): the lock can expire while the first request still runs, and a duplicate would "
                      "execute too");
    }
    for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
        const auto& idem = cfg.routes[i].idempotency;
        if (!idem.enabled || idem.lock_ttl >= needed)
            continue;
        out.push_back(
            "routes[" + std::to_string(i) +
            "].idempotency.lock_ttl: " + std::to_string(idem.lock_ttl.count()) +
            "ms is not above 2 x timeouts.upstream_connect + timeouts.upstream_response + 1s (" +
            std::to_string(needed.count()) +
            "ms): the lock can expire while the first request still runs, and a duplicate would execute too");
    }
    return out;
}

} // namespace idemgate::config
