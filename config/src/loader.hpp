// SPDX-License-Identifier: Apache-2.0
// Private to the config library: the value checks parse_values.cpp defines and the loader, the
// YAML walk behind parse, load_file and load_text. The loader's section methods are defined by
// topic: loader.cpp (the top level and the small sections), load_store.cpp (with each
// backend's section: load_redis.cpp), load_http.cpp and load_routes.cpp (with what a route does
// with each upstream answer: load_outcomes.cpp).
#pragma once

#include "idemgate/config/config.hpp"

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>
#include <yaml-cpp/yaml.h>

namespace idemgate::config::detail {

// parse_values.cpp
std::optional<std::uint64_t> parse_decimal(std::string_view text);
bool is_digit(char c);
bool is_tenant_name(std::string_view text);
std::optional<double> parse_rate(std::string_view text);
bool is_token(std::string_view text);
// An RFC 6901 pointer to a field of a JSON document (not "", the whole document).
bool is_field_pointer(std::string_view text);
bool is_host_name_char(char c);
// Requests are matched on the normal form of their path (<idemgate/common/path_normal_form.hpp>),
// so a route's prefix spelled otherwise would match none of them: what is wrong with `prefix`
// (words to follow it quoted), or "" when it is in normal form.
std::string prefix_not_normal(std::string_view prefix);
bool is_ipv6_char(char c);

// parse_endpoint with the reason for a refusal, so a config problem can say what is wrong.
struct endpoint_check {
    std::optional<endpoint> value;
    std::string problem;
};

endpoint_check check_endpoint(std::string_view text);

// loader.cpp
const char* kind_name(const YAML::Node& node);
std::string quote(std::string_view text);
std::string child_path(const std::string& parent, std::string_view key);
// ` (did you mean "x"?)` for the known key closest to `key` within two edits, or "".
std::string did_you_mean(std::string_view key, std::initializer_list<std::string_view> known);

// Walks the YAML tree once, filling the config and collecting every problem on the way, so the
// operator fixes a file in one round instead of one error per start (config messages).
class loader {
public:
    loader(std::string source, const char* (*getenv_fn)(const char*))
        : source_(std::move(source)), getenv_(getenv_fn)
    {
    }

    std::vector<std::string>& problems() { return problems_; }
    std::vector<text_position>& positions() { return positions_; }

    // A problem at a key path; its position in the file is the key's, or its nearest parent's.
    void problem(const std::string& path, const std::string& message)
    {
        problems_.push_back((path.empty() ? source_ : path) + ": " + message);
        positions_.push_back(position_of(path));
    }

    // Where the key at `path` was written (map_view records every key it reads).
    void remember(const std::string& path, const YAML::Mark& mark)
    {
        if (!mark.is_null())
            marks_.emplace_back(path, text_position{mark.line + 1, mark.column + 1});
    }

    text_position position_of(std::string path) const;

    // The entries of one YAML map, checked against the keys this level knows.
    class map_view {
    public:
        map_view(loader& owner, const YAML::Node& node, std::string path,
                 std::initializer_list<std::string_view> known)
            : path_(std::move(path))
        {
            if (!node.IsDefined() || node.IsNull())
                return;                         // `store:` with every child commented out: all defaults.
            owner.remember(path_, node.Mark()); // a list item's map has no key of its own
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
                owner.remember(key_path, entry.first.Mark());
                if (find(key)) {
                    owner.problem(key_path, "duplicate key");
                    continue;
                }
                bool is_known = known.size() == 0;
                for (auto k : known)
                    is_known = is_known || k == key;
                if (!is_known) {
                    owner.problem(key_path, "unknown key" + did_you_mean(key, known));
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

    // A string key that takes one of `choices`; anything else is a problem at the key listing
    // them: "<text> is not <what> (use a, b or c)". True when the key was given and valid.
    template<class Enum>
    bool read_choice(const map_view& map, std::string_view key, const char* what,
                     std::initializer_list<std::pair<std::string_view, Enum>> choices, Enum& out)
    {
        auto text = scalar(map, key, "a string");
        if (!text)
            return false;
        std::string names;
        std::size_t i = 0;
        for (const auto& [name, value] : choices) {
            if (*text == name) {
                out = value;
                return true;
            }
            names += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(name);
            ++i;
        }
        problem(map.path_of(key), quote(*text) + " is not " + what + " (use " + names + ")");
        return false;
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

    void load(const YAML::Node& root, config& cfg);

private:
    static YAML::Node child(const map_view& map, std::string_view key)
    {
        const auto* node = map.find(key);
        return node ? *node : YAML::Node(YAML::NodeType::Undefined);
    }

    // loader.cpp
    void load_access_log(const map_view& top, config& cfg);
    void load_request_id(const map_view& top, config& cfg);
    void load_limits(const map_view& top, limits_config& limits);
    void load_tenants(const map_view& top, std::map<std::string, tenant_config, std::less<>>& tenants);
    void load_admin(const map_view& top, admin_config& admin);
    void load_timeouts(const map_view& top, timeouts_config& timeouts);
    void load_tracing(const map_view& top, tracing_config& tracing);
    void load_http2(const map_view& top, http2_config& http2);
    void load_problems(const map_view& top, problems_config& problems);
    void load_readiness(const map_view& top, readiness_config& readiness);
    void check_lookup_path(const std::string& path, const route_config& route,
                           const std::vector<route_config>& before);
    void check_readable(const std::string& path, const std::string& file);

    // TLS from the gateway as a client (store.redis.tls, upstreams.<name>.tls) at `path` in
    // `parent`: with enabled false no other key may be set (the connection would be `plain`);
    // with it true, a certificate needs its key and the reverse, the files are readable, the
    // name is one.
    void load_client_tls(const map_view& parent, const std::string& path, client_tls_config& tls,
                         std::string_view plain);

    // load_store.cpp
    void load_store(const map_view& top, store_config& store);
    void load_local_tier(const map_view& store, local_tier_config& tier);
    void load_refusal(const map_view& store, refusal_config& refusal);
    void load_encryption(const map_view& store, encryption_config& encryption);
    std::string record_key(const map_view& map, std::string_view key, const std::string& name);
    void load_memory(const map_view& store, memory_config& memory);
    // load_redis.cpp
    void load_redis(const map_view& store, redis_config& redis);

    // load_http.cpp
    void load_upstreams(const map_view& top, std::vector<upstream_config>& upstreams);
    void load_upstream_addresses(const map_view& map, const YAML::Node& node, upstream_config& upstream);
    void load_listen_tls(const map_view& top, std::optional<listen_tls_config>& out);

    // load_routes.cpp
    void load_routes(const map_view& top, config& cfg);
    void load_idempotency(const YAML::Node& node, const std::string& path, idempotency_config& idem);
    void load_fingerprint(const YAML::Node& node, const std::string& path, fingerprint_config& fp);
    void load_key_format(const YAML::Node& node, const std::string& path, key_format_config& format);
    void load_key_source(const map_view& map, idempotency_config& idem);
    void load_header_list(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);
    static std::string lower_ascii(std::string_view text);
    void load_methods(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);
    // load_outcomes.cpp
    void load_on_status(const YAML::Node& node, const std::string& path, status_policy& out);
    void load_reconcile(const YAML::Node& node, const std::string& path, const idempotency_config& idem,
                        reconcile_config& out);
    void load_status_list(const map_view& map, std::string_view key, std::vector<unsigned>& out);
    void load_header_patterns(const YAML::Node& node, const std::string& path, std::vector<std::string>& out);

    std::string source_; // names the whole document when a problem has no key path
    const char* (*getenv_)(const char*);
    std::vector<std::string> problems_;
    std::vector<text_position> positions_;                     // one per problem
    std::vector<std::pair<std::string, text_position>> marks_; // key path, where it was written
};

} // namespace idemgate::config::detail
