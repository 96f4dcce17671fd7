// SPDX-License-Identifier: Apache-2.0
#pragma once
// Every configuration key declared once. Each map of the file is a `section`: a table with one
// row (`key`) per key it accepts, saying its name, the member it fills, its kind of value (how it
// is read, with the problems it reports, and how --print-config writes it back) and whether a
// reload applies it. From that one table the loader knows the map's keys (an unknown one is a
// problem naming the closest) and reads them in the table's order, --print-config writes them in
// that order, and describe_keys (idemgate --print-keys) lists each with its reload column: what a
// reload compares (restart_only::keys) and what the configuration reference is checked against.
// A rule between keys is a row's `then` (after the row is read) or the section's check (after
// the whole map).
#include "kinds.hpp"

#include <concepts>
#include <functional>
#include <string>
#include <vector>

namespace idemgate::config::detail {

// Whether a reload applies a key; `inherit`: as the map it is in does (the top level: reloadable).
enum class reload { inherit, reloadable, restart };

template<class S>
using key_rule = std::function<void(loader&, const map_view&, S&)>;
using key_lister = std::function<void(const std::string& path, bool restart, std::vector<key_description>&)>;

template<class S>
struct key_options {
    reload when = reload::inherit;
    key_rule<S> then;                    // run after the key is read: a rule on it and the keys above it
    std::function<bool(const S&)> shown; // printed only when this says so
    bool read_here = true;               // false: an earlier key of the map reads it (address: addresses)
    bool printed = true;
    bool listed = true; // false: a key refused with its own message (not one the file may set)
};

// The whole value a key is in, for a kind that reads or prints more than one member.
inline constexpr std::identity whole;
// The member Inner of the member Outer: a map of the file held in two members (access_log).
template<auto Outer, auto Inner>
struct member_of {
    template<class S>
    auto& operator()(S& value) const
    {
        return (value.*Outer).*Inner;
    }
};

// One row: the key `name`, its member (`project`: a member pointer, or a function from the
// map's value to the member), the kind of its value (a struct with read and print, and
// optionally shown and list, below) and options.
template<class S>
struct key {
    std::string_view name;
    reload when = reload::inherit;
    bool listed = true;
    key_rule<S> read; // empty: read by another key
    std::function<void(YAML::Emitter&, const S&)> print;
    key_lister list; // the keys below this one

    template<class Project, class Kind>
    requires std::invocable<Project, S&> key(std::string_view key_name, Project project, Kind kind,
                                             key_options<S> o = {})
        : name(key_name), when(o.when), listed(o.listed)
    {
        if (o.read_here)
            read = [key_name, project, kind, then = std::move(o.then)](loader& l, const map_view& map, S& s) {
                kind.read(l, map, key_name, std::invoke(project, s));
                if (then)
                    then(l, map, s);
            };
        if (o.printed)
            print = [key_name, project, kind, shown = std::move(o.shown)](YAML::Emitter& out, const S& s) {
                const auto& value = std::invoke(project, s);
                if (shown && !shown(s))
                    return;
                if constexpr (requires { kind.shown(value); })
                    if (!kind.shown(value))
                        return;
                out << YAML::Key << std::string(key_name) << YAML::Value;
                kind.print(out, value);
            };
        if constexpr (requires(std::vector<key_description> & v) { kind.list(std::string(), false, v); })
            list = [kind](const std::string& path, bool restart, std::vector<key_description>& out) {
                kind.list(path, restart, out);
            };
    }
};

// One map of the file. `check`: the rules between its keys, run once all are read.
template<class S>
class section {
public:
    section(std::initializer_list<key<S>> keys, key_rule<S> check = {})
        : keys_(keys), check_(std::move(check))
    {
        for (const auto& k : keys_)
            names_.push_back(k.name);
    }

    // `only_a_map`: nothing is read from a node that is not a map (the document, a route).
    void read(loader& l, const YAML::Node& node, const std::string& path, S& out,
              bool only_a_map = false) const
    {
        map_view map(l, node, path, names_);
        if (only_a_map && !map.is_map())
            return;
        for (const auto& k : keys_)
            if (k.read)
                k.read(l, map, out);
        if (check_)
            check_(l, map, out);
    }

    void print(YAML::Emitter& out, const S& value) const
    {
        out << YAML::BeginMap;
        for (const auto& k : keys_)
            if (k.print)
                k.print(out, value);
        out << YAML::EndMap;
    }

    void list(const std::string& path, bool restart, std::vector<key_description>& out) const
    {
        for (const auto& k : keys_) {
            if (!k.listed)
                continue;
            auto key_path = child_path(path, k.name);
            bool key_restart = k.when == reload::inherit ? restart : k.when == reload::restart;
            out.push_back({key_path, key_restart});
            if (k.list)
                k.list(key_path, key_restart, out);
        }
    }

private:
    std::vector<key<S>> keys_;
    std::vector<std::string_view> names_;
    key_rule<S> check_;
};

// A list read item by item by one of the loader's list methods; printed on one line.
template<class Item>
struct a_list {
    void (loader::*load)(const YAML::Node&, const std::string&, std::vector<Item>&) = nullptr;
    void read(loader& l, const map_view& m, std::string_view k, std::vector<Item>& out) const
    {
        if (const auto* node = m.find(k))
            (l.*load)(*node, m.path_of(k), out);
    }
    void print(YAML::Emitter& out, const std::vector<Item>& items) const
    {
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& i : items)
            emit(out, i);
        out << YAML::EndSeq;
    }
};

// A map of its own (an absent one: every key at its default).
template<class T>
struct nested {
    const section<T>& keys;
    void read(loader& l, const map_view& m, std::string_view k, T& out) const
    {
        keys.read(l, loader::child(m, k), m.path_of(k), out);
    }
    void print(YAML::Emitter& out, const T& v) const { keys.print(out, v); }
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const
    {
        keys.list(path, restart, out);
    }
};

// upstreams.<name>.timeouts, routes[].timeouts: printed only when something in it is set.
struct timeout_map : nested<timeout_overrides> {
    bool shown(const timeout_overrides& t) const { return t.any(); }
};

// Deduction from an initializer (an aggregate's, which GCC deduces by itself and clang 14 does
// not: the fuzz targets build the configuration with clang).
template<class Item>
a_list(void (loader::*)(const YAML::Node&, const std::string&, std::vector<Item>&)) -> a_list<Item>;
template<class T>
nested(const section<T>&) -> nested<T>;

// The sections, by the file that declares them.
const section<config>& config_keys();      // config_keys.cpp
const section<store_config>& store_keys(); // store_keys.cpp
const section<redis_config>& redis_keys(); // redis_keys.cpp
// TLS from the gateway as a client (http_keys.cpp): `plain` names the connection without it
// ("plain HTTP" to an upstream, "plain TCP" to Redis).
section<client_tls_config> client_tls_section(std::string_view plain);
const section<http2_config>& http2_keys();
const section<idempotency_config>& idempotency_keys(); // route_keys.cpp
const section<reconcile_config>& reconcile_keys();     // outcome_keys.cpp
// upstreams.<name>.timeouts, routes[].timeouts, and resolving each route's effective timeouts
// once every section is read (timeout_keys.cpp).
const section<timeout_overrides>& upstream_timeouts_keys();
const section<timeout_overrides>& route_timeouts_keys();
void resolve_timeouts(config& cfg);

// The `then` of routes[].idempotency.reconcile: a probe resolves a held key, so the route must
// hold some.
void reconcile_holds(loader& l, const map_view& map, idempotency_config& idem);
// routes[].idempotency.on_status (outcome_keys.cpp)
struct status_map {
    void read(loader& l, const map_view& m, std::string_view k, status_policy& out) const;
    void print(YAML::Emitter& out, const status_policy& v) const;
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const;
};

// tracing and the OpenTelemetry SDK environment variables (otel_environment.cpp): what is wrong
// with an OTLP/HTTP URL ("" when nothing); a "Name=value,..." header list read into `out` (what
// is wrong with it, or ""); the otlp_endpoint row's `then` and the section's check.
std::string otlp_url_problem(std::string_view url);
std::string header_list_problem(std::string_view text, bool percent_decoded,
                                std::vector<std::pair<std::string, std::string>>& out);
void otlp_endpoint_from_environment(loader& l, const map_view& map, tracing_config& t);
void tracing_from_environment(loader& l, const map_view& map, tracing_config& t);

// The top level's keys that are neither a value nor a map of fixed keys, defined next to the
// sections they hold.
struct optional_listen_tls { // tls: absent = plain HTTP (http_keys.cpp)
    void read(loader& l, const map_view& m, std::string_view k, std::optional<listen_tls_config>& out) const;
    void print(YAML::Emitter& out, const std::optional<listen_tls_config>& v) const;
    bool shown(const std::optional<listen_tls_config>& v) const { return v.has_value(); }
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const;
};
struct upstream_map { // upstreams.<name> (http_keys.cpp)
    void read(loader& l, const map_view& m, std::string_view k, std::vector<upstream_config>& out) const;
    void print(YAML::Emitter& out, const std::vector<upstream_config>& v) const;
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const;
};
struct route_list { // routes[], which name upstreams (route_keys.cpp)
    void read(loader& l, const map_view& m, std::string_view k, config& out) const;
    void print(YAML::Emitter& out, const config& v) const;
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const;
};

// A map whose keys are names the operator chooses (upstreams.<name>, tenants.<name>): one entry
// per name, each a map of `keys`.
template<class T>
void list_named(const section<T>& keys, const std::string& path, bool restart,
                std::vector<key_description>& out)
{
    out.push_back({path + ".<name>", restart});
    keys.list(path + ".<name>", restart, out);
}

} // namespace idemgate::config::detail
