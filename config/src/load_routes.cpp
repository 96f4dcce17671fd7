// SPDX-License-Identifier: Apache-2.0
#include "loader.hpp"

#include <algorithm>
#include <idemgate/config/key_pattern.hpp>
#include <string>
#include <utility>

namespace idemgate::config::detail {

void loader::load_routes(const map_view& top, config& cfg)
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
            else if (auto wrong = prefix_not_normal(*text); !wrong.empty())
                problem(map.path_of("path_prefix"), quote(*text) + wrong);
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
        check_lookup_path(path + ".idempotency.client_lookup_path", route, cfg.routes);
        cfg.routes.push_back(std::move(route));
    }
}

void loader::load_idempotency(const YAML::Node& node, const std::string& path, idempotency_config& idem)
{
    map_view map(*this, node, path,
                 {"methods",
                  "key_header",
                  "required",
                  "lock_ttl",
                  "record_ttl",
                  "tenant_header",
                  "tenant_from",
                  "mismatch_status",
                  "credential_headers",
                  "fingerprint",
                  "mode",
                  "expose_expiry",
                  "on_unknown_outcome",
                  "on_in_flight",
                  "wait_timeout",
                  "on_status",
                  "status_header",
                  "replay_drop_headers",
                  "tombstone_ttl",
                  "attempt_header",
                  "key_format",
                  "key_space",
                  "key_from",
                  "key_json_pointer",
                  "key_json_pointers",
                  "client_lookup_path",
                  "reconcile"});
    idem.enabled = true;

    if (const auto* methods = map.find("methods"))
        load_methods(*methods, map.path_of("methods"), idem.methods);
    read_header_name(map, "key_header", idem.key_header, false);
    read_bool(map, "required", idem.required);
    read_duration(map, "lock_ttl", idem.lock_ttl);
    read_duration(map, "record_ttl", idem.record_ttl);
    read_header_name(map, "tenant_header", idem.tenant_header, true);
    if (read_choice(map, "tenant_from", "allowed",
                    {{"header", tenant_source::header}, {"client_cert", tenant_source::client_cert}},
                    idem.tenant_from) &&
        idem.tenant_from == tenant_source::client_cert && !idem.tenant_header.empty())
        problem(map.path_of("tenant_from"),
                "client_cert takes the tenant from the client certificate; remove tenant_header");

    if (const auto* list = map.find("credential_headers"))
        load_header_list(*list, map.path_of("credential_headers"), idem.credential_headers);
    if (const auto* fp = map.find("fingerprint"))
        load_fingerprint(*fp, map.path_of("fingerprint"), idem.fingerprint);
    read_choice(map, "mode", "a mode", {{"enforce", route_mode::enforce}, {"shadow", route_mode::shadow}},
                idem.mode);
    read_bool(map, "expose_expiry", idem.expose_expiry);
    read_choice(map, "on_unknown_outcome", "allowed",
                {{"release", unknown_outcome_mode::release}, {"hold", unknown_outcome_mode::hold}},
                idem.on_unknown_outcome);
    read_choice(map, "on_in_flight", "allowed",
                {{"reject", in_flight_mode::reject}, {"wait", in_flight_mode::wait}}, idem.on_in_flight);
    read_duration(map, "wait_timeout", idem.wait_timeout);
    if (const auto* on_status = map.find("on_status"))
        load_on_status(*on_status, map.path_of("on_status"), idem.on_status);
    read_header_name(map, "status_header", idem.status_header, true);
    if (const auto* drop = map.find("replay_drop_headers"))
        load_header_patterns(*drop, map.path_of("replay_drop_headers"), idem.replay_drop_headers);
    read_duration(map, "tombstone_ttl", idem.tombstone_ttl, true);
    read_header_name(map, "attempt_header", idem.attempt_header, true);
    if (const auto* format = map.find("key_format"))
        load_key_format(*format, map.path_of("key_format"), idem.key_format);
    read_choice(map, "key_space", "a key space",
                {{"tenant", key_space_mode::tenant}, {"route", key_space_mode::route}}, idem.key_space);
    load_key_source(map, idem);
    read_string(map, "client_lookup_path", idem.client_lookup_path);
    if (const auto* reconcile = map.find("reconcile"))
        load_reconcile(*reconcile, map.path_of("reconcile"), idem, idem.reconcile);

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

// A client lookup path lies inside its route (the route's scope answers it), is a plain path
// the key is appended to, and is not another route's.
void loader::check_lookup_path(const std::string& path, const route_config& route,
                               const std::vector<route_config>& before)
{
    const auto& lookup = route.idempotency.client_lookup_path;
    if (lookup.empty())
        return;
    if (!lookup.starts_with(route.path_prefix) || lookup.size() <= route.path_prefix.size()) {
        problem(path, quote(lookup) + " must start with the route's path_prefix " + quote(route.path_prefix) +
                          " and go on past it (e.g. " + quote(route.path_prefix + "idempotency-keys/") + ")");
        return;
    }
    for (char ch : lookup) {
        auto c = static_cast<unsigned char>(ch);
        if (c <= 0x20 || c >= 0x7f || c == '?' || c == '#' || c == '%') {
            problem(path, quote(lookup) + " must be a plain path (visible ASCII without '?', '#' or '%')");
            return;
        }
    }
    if (lookup.starts_with(well_known_path))
        problem(path, quote(lookup) + " is inside the gateway's own " + std::string(well_known_path));
    for (std::size_t i = 0; i < before.size(); ++i)
        if (before[i].idempotency.client_lookup_path == lookup)
            problem(path, quote(lookup) + " is also routes[" + std::to_string(i) +
                              "].idempotency.client_lookup_path");
}

void loader::load_key_format(const YAML::Node& node, const std::string& path, key_format_config& format)
{
    map_view map(*this, node, path, {"min_length", "max_length", "pattern"});
    read_int(map, "min_length", format.min_length, 1, 255);
    read_int(map, "max_length", format.max_length, 1, 255);
    if (format.min_length > format.max_length)
        problem(path, "min_length " + std::to_string(format.min_length) + " is greater than max_length " +
                          std::to_string(format.max_length));
    auto text = scalar(map, "pattern", "a string");
    if (!text || text->empty())
        return;
    if (*text == "uuid") {
        format.uuid = true;
        if (format.min_length > 36 || format.max_length < 36)
            problem(map.path_of("pattern"), "uuid keys have 36 characters, outside min_length " +
                                                std::to_string(format.min_length) + " to max_length " +
                                                std::to_string(format.max_length));
    } else {
        std::string error;
        format.regex = key_pattern::compile(*text, error);
        if (!format.regex) {
            problem(map.path_of("pattern"),
                    quote(*text) + " is not a usable ECMAScript regular expression: " + error);
            return;
        }
    }
    format.pattern = std::move(*text);
}

// RFC 6901: "" (the whole document) is not a field; every other pointer starts with '/', and '~'
// is only followed by 0 or 1.
bool is_field_pointer(std::string_view text)
{
    bool ok = !text.empty() && text.front() == '/';
    for (std::size_t k = 0; ok && k < text.size(); ++k)
        if (text[k] == '~')
            ok = k + 1 < text.size() && (text[k + 1] == '0' || text[k + 1] == '1');
    return ok;
}

void loader::load_key_source(const map_view& map, idempotency_config& idem)
{
    bool from_body = false;
    if (read_choice(map, "key_from", "a key source",
                    {{"header", key_source::header},
                     {"json", key_source::json},
                     {"header_or_json", key_source::header_or_json}},
                    idem.key_from))
        from_body = idem.key_from != key_source::header;
    const auto* one = map.find("key_json_pointer");
    const auto* several = map.find("key_json_pointers");
    auto take = [&](const YAML::Node& node, const std::string& path) {
        auto text = scalar(node, path, "a JSON Pointer");
        if (!text)
            return;
        if (!is_field_pointer(*text))
            problem(path, quote(*text) + " is not a JSON Pointer to a field (e.g. \"/client_ref\")");
        else if (std::find(idem.key_json_pointers.begin(), idem.key_json_pointers.end(), *text) !=
                 idem.key_json_pointers.end())
            problem(path, quote(*text) + " is listed twice");
        else
            idem.key_json_pointers.push_back(std::move(*text));
    };
    if (one && several) {
        problem(map.path_of("key_json_pointers"), "set key_json_pointer or key_json_pointers, not both");
        return;
    }
    if (one) {
        take(*one, map.path_of("key_json_pointer"));
    } else if (several) {
        auto path = map.path_of("key_json_pointers");
        if (!several->IsSequence() || several->size() == 0) {
            problem(path, several->IsSequence() ? std::string("must not be empty")
                                                : std::string("expected a list, got ") + kind_name(*several));
            return;
        }
        for (std::size_t i = 0; i < several->size(); ++i)
            take((*several)[i], path + "[" + std::to_string(i) + "]");
    }
    if ((one || several) && idem.key_from == key_source::header && map.find("key_from"))
        problem(map.path_of(one ? "key_json_pointer" : "key_json_pointers"),
                "only read with key_from: json or header_or_json");
    else if ((one || several) && !map.find("key_from"))
        problem(map.path_of(one ? "key_json_pointer" : "key_json_pointers"),
                "only read with key_from: json or header_or_json (key_from is header by default)");
    if (from_body && !one && !several)
        problem(map.path_of("key_from"), quote(map.find("key_from")->Scalar()) +
                                             " takes the key from the body: set key_json_pointer (e.g. "
                                             "\"/client_ref\") or key_json_pointers");
}

void loader::load_fingerprint(const YAML::Node& node, const std::string& path, fingerprint_config& fp)
{
    map_view map(*this, node, path, {"query", "headers", "json", "ignore_json_fields", "decode"});
    read_choice(map, "decode", "a content coding to decode",
                {{"none", body_decoding::none}, {"gzip", body_decoding::gzip}}, fp.decode);
    read_bool(map, "query", fp.query);
    if (const auto* list = map.find("headers"))
        load_header_list(*list, map.path_of("headers"), fp.headers);
    read_choice(map, "json", "a JSON mode", {{"raw", json_mode::raw}, {"canonical", json_mode::canonical}},
                fp.json);
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
            if (!is_field_pointer(*text))
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
void loader::load_header_list(const YAML::Node& node, const std::string& path, std::vector<std::string>& out)
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

std::string loader::lower_ascii(std::string_view text)
{
    std::string out(text);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

void loader::load_methods(const YAML::Node& node, const std::string& path, std::vector<std::string>& out)
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

} // namespace idemgate::config::detail
