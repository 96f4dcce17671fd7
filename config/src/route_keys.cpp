// SPDX-License-Identifier: Apache-2.0
// A route's keys (keys.hpp): routes[] and its idempotency block, with the fingerprint, the key's
// format and where the key comes from; what the route does with each answer is outcome_keys.cpp.
#include "keys.hpp"

#include <algorithm>
#include <idemgate/config/key_pattern.hpp>
#include <string>
#include <utility>

namespace idemgate::config::detail {

namespace {

using idem = idempotency_config;

std::string prefix_problem(std::string_view prefix)
{
    if (prefix.empty() || prefix.front() != '/')
        return quote(prefix) + " must start with '/'";
    if (auto wrong = prefix_not_normal(prefix); !wrong.empty())
        return quote(prefix) + wrong;
    return {};
}

// routes[].upstream: the name of an upstream (read before the routes).
struct upstream_name {
    void read(loader& l, const map_view& map, std::string_view key, route_config& route) const
    {
        a_string{.required = true}.read(l, map, key, route.upstream);
        if (!map.find(key) || !map.find(key)->IsScalar())
            return;
        const auto& upstreams = l.so_far().upstreams;
        auto found = std::find_if(upstreams.begin(), upstreams.end(),
                                  [&](const upstream_config& u) { return u.name == route.upstream; });
        if (found == upstreams.end())
            l.problem(map.path_of(key), "unknown upstream " + quote(route.upstream));
        else
            route.upstream_index = static_cast<std::size_t>(found - upstreams.begin());
    }
    void print(YAML::Emitter& out, const route_config& route) const { out << route.upstream; }
};

// routes[].idempotency: present = the route is guarded.
struct guard {
    void read(loader& l, const map_view& map, std::string_view key, idem& out) const
    {
        if (const auto* node = map.find(key)) {
            out.enabled = true;
            idempotency_keys().read(l, *node, map.path_of(key), out);
        }
    }
    void print(YAML::Emitter& out, const idem& v) const { idempotency_keys().print(out, v); }
    bool shown(const idem& v) const { return v.enabled; }
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const
    {
        idempotency_keys().list(path, restart, out);
    }
};

const section<route_config>& route_keys()
{
    static const section<route_config> keys{
        {"path_prefix", &route_config::path_prefix, a_string{.problem = prefix_problem, .required = true}},
        {"upstream", whole, upstream_name{}},
        {"idempotency", &route_config::idempotency, guard{}},
        {"timeouts", &route_config::timeouts, timeout_map{{route_timeouts_keys()}}},
    };
    return keys;
}

// A client lookup path lies inside its route (the route's scope answers it), is a plain path
// the key is appended to, and is not another route's.
void check_lookup_path(loader& l, const std::string& path, const route_config& route,
                       const std::vector<route_config>& before)
{
    const auto& lookup = route.idempotency.client_lookup_path;
    if (lookup.empty())
        return;
    if (!lookup.starts_with(route.path_prefix) || lookup.size() <= route.path_prefix.size()) {
        l.problem(path, quote(lookup) + " must start with the route's path_prefix " +
                            quote(route.path_prefix) + " and go on past it (e.g. " +
                            quote(route.path_prefix + "idempotency-keys/") + ")");
        return;
    }
    for (char ch : lookup) {
        auto c = static_cast<unsigned char>(ch);
        if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '%') {
            l.problem(path, quote(lookup) + " must be a plain path (visible ASCII without '?', '#' or '%')");
            return;
        }
    }
    if (lookup.starts_with(well_known_path))
        l.problem(path, quote(lookup) + " is inside the gateway's own " + std::string(well_known_path));
    for (std::size_t i = 0; i < before.size(); ++i)
        if (before[i].idempotency.client_lookup_path == lookup)
            l.problem(path, quote(lookup) + " is also routes[" + std::to_string(i) +
                                "].idempotency.client_lookup_path");
}

struct mismatch_status {
    void read(loader& l, const map_view& map, std::string_view key, unsigned& out) const
    {
        auto text = l.scalar(map, key, "an integer");
        if (!text)
            return;
        if (*text == "409" || *text == "422")
            out = *text == "409" ? 409 : 422;
        else
            l.problem(map.path_of(key),
                      (parse_decimal(*text) ? *text : quote(*text)) + " is not allowed (use 409 or 422)");
    }
    void print(YAML::Emitter& out, unsigned v) const { out << v; }
};

const section<fingerprint_config>& fingerprint_keys()
{
    using f = fingerprint_config;
    static const section<f> keys{
        {"query", &f::query, a_bool{}},
        {"headers", &f::headers, a_list{&loader::load_header_list}},
        {"json", &f::json, a_choice{"a JSON mode"}},
        {"ignore_json_fields",
         &f::ignore_json_fields,
         a_list{&loader::load_field_pointers},
         {.then =
              [](loader&, const map_view&, f& fp) {
                  if (!fp.ignore_json_fields.empty())
                      fp.json = json_mode::canonical; // implied
              }}},
        {"decode", &f::decode, a_choice{"a content coding to decode"}},
    };
    return keys;
}

// key_format.pattern: "" (any), "uuid", or a regular expression compiled here.
struct key_pattern_text {
    void read(loader& l, const map_view& map, std::string_view key, key_format_config& format) const
    {
        auto text = l.scalar(map, key, "a string");
        if (!text || text->empty())
            return;
        if (*text == "uuid") {
            format.uuid = true;
            if (format.min_length > 36 || format.max_length < 36)
                l.problem(map.path_of(key), "uuid keys have 36 characters, outside min_length " +
                                                std::to_string(format.min_length) + " to max_length " +
                                                std::to_string(format.max_length));
        } else {
            std::string error;
            format.regex = key_pattern::compile(*text, error);
            if (!format.regex) {
                l.problem(map.path_of(key),
                          quote(*text) + " is not a usable ECMAScript regular expression: " + error);
                return;
            }
        }
        format.pattern = std::move(*text);
    }
    void print(YAML::Emitter& out, const key_format_config& format) const
    {
        out << YAML::DoubleQuoted << format.pattern;
    }
};

const section<key_format_config>& key_format_keys()
{
    using k = key_format_config;
    static const section<k> keys{
        {"min_length", &k::min_length, an_int{1, 255}},
        {"max_length",
         &k::max_length,
         an_int{1, 255},
         {.then =
              [](loader& l, const map_view& map, k& format) {
                  if (format.min_length > format.max_length)
                      l.problem(map.path(), "min_length " + std::to_string(format.min_length) +
                                                " is greater than max_length " +
                                                std::to_string(format.max_length));
              }}},
        {"pattern", whole, key_pattern_text{}},
    };
    return keys;
}

// key_from with key_json_pointer or key_json_pointers: where the key comes from, read together.
struct key_source_keys {
    void read(loader& l, const map_view& map, std::string_view, idem& i) const
    {
        bool from_body = false;
        if (a_choice{"a key source"}.read_given(l, map, "key_from", i.key_from))
            from_body = i.key_from != key_source::header;
        const auto* one = map.find("key_json_pointer");
        const auto* several = map.find("key_json_pointers");
        auto take = [&](const YAML::Node& node, const std::string& path) {
            auto text = l.scalar(node, path, "a JSON Pointer");
            if (!text)
                return;
            if (!is_field_pointer(*text))
                l.problem(path, quote(*text) + " is not a JSON Pointer to a field (e.g. \"/client_ref\")");
            else if (std::find(i.key_json_pointers.begin(), i.key_json_pointers.end(), *text) !=
                     i.key_json_pointers.end())
                l.problem(path, quote(*text) + " is listed twice");
            else
                i.key_json_pointers.push_back(std::move(*text));
        };
        if (one && several) {
            l.problem(map.path_of("key_json_pointers"),
                      "set key_json_pointer or key_json_pointers, not both");
            return;
        }
        if (one) {
            take(*one, map.path_of("key_json_pointer"));
        } else if (several) {
            auto path = map.path_of("key_json_pointers");
            if (!several->IsSequence() || several->size() == 0) {
                l.problem(path, several->IsSequence()
                                    ? std::string("must not be empty")
                                    : std::string("expected a list, got ") + kind_name(*several));
                return;
            }
            for (std::size_t n = 0; n < several->size(); ++n)
                take((*several)[n], path + "[" + std::to_string(n) + "]");
        }
        auto pointers = map.path_of(one ? "key_json_pointer" : "key_json_pointers");
        if ((one || several) && i.key_from == key_source::header && map.find("key_from"))
            l.problem(pointers, "only read with key_from: json or header_or_json");
        else if ((one || several) && !map.find("key_from"))
            l.problem(pointers,
                      "only read with key_from: json or header_or_json (key_from is header by default)");
        if (from_body && !one && !several)
            l.problem(map.path_of("key_from"), quote(map.find("key_from")->Scalar()) +
                                                   " takes the key from the body: set key_json_pointer (e.g. "
                                                   "\"/client_ref\") or key_json_pointers");
    }
    void print(YAML::Emitter& out, const idem& i) const { a_choice{}.print(out, i.key_from); }
};

void tenant_from_rule(loader& l, const map_view& map, idem& i)
{
    if (map.find("tenant_from") && i.tenant_from == tenant_source::client_cert && !i.tenant_header.empty())
        l.problem(map.path_of("tenant_from"),
                  "client_cert takes the tenant from the client certificate; remove tenant_header");
}

} // namespace

// routes[].idempotency, in the order of the example (and --print-config).
const section<idem>& idempotency_keys()
{
    using i = idem;
    auto from_certificate = [](const i& v) { return v.tenant_from == tenant_source::client_cert; };
    static const section<i> keys{
        {"methods", &i::methods, a_list{&loader::load_methods}},
        {"key_header", &i::key_header, a_header{}},
        {"required", &i::required, a_bool{}},
        {"lock_ttl", &i::lock_ttl, a_duration{}},
        {"record_ttl", &i::record_ttl, a_duration{}},
        // Printed is the one that says where the tenant comes from.
        {"tenant_header",
         &i::tenant_header,
         a_header{.empty = true},
         {.shown = [=](const i& v) { return !from_certificate(v); }}},
        {"tenant_from",
         &i::tenant_from,
         a_choice{"allowed"},
         {.then = tenant_from_rule, .shown = from_certificate}},
        {"mismatch_status", &i::mismatch_status, mismatch_status{}},
        {"credential_headers", &i::credential_headers, a_list{&loader::load_header_list}},
        {"fingerprint", &i::fingerprint, nested{fingerprint_keys()}},
        {"mode", &i::mode, a_choice{"a mode"}},
        {"expose_expiry", &i::expose_expiry, a_bool{}},
        {"on_unknown_outcome", &i::on_unknown_outcome, a_choice{"allowed"}},
        {"on_in_flight", &i::on_in_flight, a_choice{"allowed"}},
        {"wait_timeout", &i::wait_timeout, a_duration{}},
        {"on_status", &i::on_status, status_map{}},
        {"status_header", &i::status_header, a_header{.empty = true}},
        {"replay_drop_headers", &i::replay_drop_headers, a_list{&loader::load_header_patterns}},
        {"tombstone_ttl", &i::tombstone_ttl, a_duration{.zero = true}},
        {"attempt_header", &i::attempt_header, a_header{.empty = true}},
        {"key_format", &i::key_format, nested{key_format_keys()}},
        {"key_space", &i::key_space, a_choice{"a key space"}},
        {"key_from", whole, key_source_keys{}},
        {"key_json_pointer",
         &i::key_json_pointers,
         a_list<std::string>{},
         {.read_here = false, .printed = false}},
        {"key_json_pointers",
         &i::key_json_pointers,
         a_list<std::string>{},
         {.shown = [](const i& v) { return v.key_from != key_source::header; }, .read_here = false}},
        {"client_lookup_path", &i::client_lookup_path, a_string{.quoted = true}},
        {"reconcile", &i::reconcile, nested{reconcile_keys()}, {.then = reconcile_holds}},
    };
    return keys;
}

void route_list::read(loader& l, const map_view& m, std::string_view k, config& cfg) const
{
    auto node = loader::child(m, k);
    if (node.IsDefined() && !node.IsNull() && !node.IsSequence()) {
        l.problem("routes", std::string("expected a list, got ") + kind_name(node));
        return;
    }
    if (!node.IsDefined() || node.IsNull() || node.size() == 0) {
        l.problem("routes", "at least one route is required");
        return;
    }
    if (cfg.upstreams.empty())
        l.problem("upstreams", "at least one upstream is required");
    for (std::size_t i = 0; i < node.size(); ++i) {
        auto path = "routes[" + std::to_string(i) + "]";
        route_config route;
        route_keys().read(l, node[i], path, route, true);
        if (!node[i].IsMap() && !node[i].IsNull())
            continue; // already reported as the wrong type
        check_lookup_path(l, path + ".idempotency.client_lookup_path", route, cfg.routes);
        cfg.routes.push_back(std::move(route));
    }
}

void route_list::print(YAML::Emitter& out, const config& cfg) const
{
    out << YAML::BeginSeq;
    for (const auto& r : cfg.routes)
        route_keys().print(out, r);
    out << YAML::EndSeq;
}

void route_list::list(const std::string& path, bool restart, std::vector<key_description>& out) const
{
    route_keys().list(path + "[]", restart, out);
}

} // namespace idemgate::config::detail
