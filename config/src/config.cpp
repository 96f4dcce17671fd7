// SPDX-License-Identifier: Apache-2.0
#include "idemgate/config/config.hpp"

#include "kinds.hpp"
#include "loader.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
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

config_error::config_error(std::vector<std::string> problems, std::vector<text_position> positions)
    : std::runtime_error(join_lines(problems)), problems_(std::move(problems)),
      positions_(std::move(positions))
{
    positions_.resize(problems_.size());
}

namespace detail {
namespace {

const char* system_getenv(const char* name)
{
    return std::getenv(name);
}

// `source` names where the text came from (a file path, or "config") in syntax errors.
config parse_named(std::string_view yaml_text, const std::string& source,
                   const char* (*getenv_fn)(const char*), bool from_file)
{
    YAML::Node root;
    try {
        root = YAML::Load(std::string(yaml_text));
    } catch (const YAML::Exception& e) {
        std::string message = source + ": YAML syntax error";
        if (!e.mark.is_null())
            message += " at line " + std::to_string(e.mark.line + 1) + ", column " +
                       std::to_string(e.mark.column + 1);
        text_position at;
        if (!e.mark.is_null())
            at = {e.mark.line + 1, e.mark.column + 1};
        throw config_error({message + ": " + e.msg}, {at});
    }

    loader load(source, getenv_fn ? getenv_fn : &system_getenv);
    if (from_file) {
        auto slash = source.rfind('/');
        if (slash != std::string::npos)
            load.set_base_dir(source.substr(0, slash + 1));
    }
    config cfg;
    load.load(root, cfg);
    if (!load.problems().empty())
        throw config_error(std::move(load.problems()), std::move(load.positions()));
    return cfg;
}

} // namespace
} // namespace detail

config parse(std::string_view yaml_text, const char* (*getenv_fn)(const char*))
{
    return detail::parse_named(yaml_text, "config", getenv_fn, false);
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
    return detail::parse_named(read_file(path), path, nullptr, true);
}

config load_text(const std::string& text, const std::string& path)
{
    return detail::parse_named(text, path, nullptr, true);
}

std::vector<std::string> changed_sections(const std::string& old_text, const std::string& new_text,
                                          const std::vector<std::string>& keys,
                                          const std::vector<std::string>& reloadable_parts)
{
    std::vector<std::string> out;
    YAML::Node before, after;
    try {
        before = YAML::Load(old_text);
        after = YAML::Load(new_text);
    } catch (const YAML::Exception&) {
        return keys; // unreadable: treat every section as changed (the caller parsed both already)
    }
    auto text_of = [&](const YAML::Node& doc, const std::string& key) {
        if (!doc.IsMap() || !doc[key])
            return std::string();
        auto section = YAML::Clone(doc[key]);
        for (const auto& part : reloadable_parts)
            if (part.starts_with(key + ".") && section.IsMap())
                section.remove(part.substr(key.size() + 1));
        YAML::Emitter e;
        e << section;
        return std::string(e.c_str());
    };
    for (const auto& k : keys)
        if (text_of(before, k) != text_of(after, k))
            out.push_back(k);
    return out;
}

const std::array<status_action, 5> status_policy::default_classes{
    status_action::record, status_action::record, status_action::record, status_action::record,
    status_action::release};

// The answers that say the request was not processed and may be retried: a timeout reading it
// (408), too early (425), rate-limited (429).
const std::map<unsigned, status_action>& status_policy::default_codes()
{
    static const std::map<unsigned, status_action> codes{
        {408, status_action::release}, {425, status_action::release}, {429, status_action::release}};
    return codes;
}

status_policy::status_policy()
{
    resolve(default_classes, default_codes());
}

void status_policy::resolve(const std::array<status_action, 5>& classes,
                            const std::map<unsigned, status_action>& codes) noexcept
{
    classes_ = classes;
    for (unsigned status = 100; status < 600; ++status)
        actions_[status - 100] = classes[status / 100 - 1];
    for (const auto& [code, action] : codes)
        if (code >= 100 && code < 600)
            actions_[code - 100] = action;
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

namespace {

// The gateway answers its own paths (the contract, the problem pages, client lookups) before any
// route: a route that would otherwise take them never sees those requests. "/" is a catch-all
// that means no particular path, so it is not warned about.
void route_cover_warnings(const config& cfg, std::vector<std::string>& out)
{
    auto covers = [](std::string_view prefix, std::string_view own) {
        return prefix.size() > 1 && (own.starts_with(prefix) || prefix.starts_with(own));
    };
    for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
        const auto& prefix = cfg.routes[i].path_prefix;
        auto at = "routes[" + std::to_string(i) + "].path_prefix: \"" + prefix + "\" ";
        if (covers(prefix, well_known_path))
            out.push_back(at + "covers the gateway's own " + std::string(well_known_path) +
                          " (its contract and problem pages), which the gateway answers itself");
        for (std::size_t j = 0; j < cfg.routes.size(); ++j) {
            const auto& lookup = cfg.routes[j].idempotency.client_lookup_path;
            if (j != i && !lookup.empty() && prefix.size() > cfg.routes[j].path_prefix.size() &&
                covers(prefix, lookup))
                out.push_back(at + "covers routes[" + std::to_string(j) +
                              "].idempotency.client_lookup_path \"" + lookup +
                              "\", which the gateway answers itself");
        }
    }
}

// A guarded method the HTTP RFCs do not define (a typo, or an extension a client may not send),
// and a guarded safe read (GET, HEAD: RFC 9110 9.2.1), whose answers would be recorded and
// replayed instead of read again.
void method_warnings(const config& cfg, std::vector<std::string>& out)
{
    static constexpr std::array<std::string_view, 9> known{"GET",     "HEAD",    "POST",  "PUT",  "DELETE",
                                                           "CONNECT", "OPTIONS", "TRACE", "PATCH"};
    for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
        const auto& idem = cfg.routes[i].idempotency;
        if (!idem.enabled)
            continue;
        auto at = "routes[" + std::to_string(i) + "].idempotency.methods: ";
        for (const auto& m : idem.methods) {
            if (std::find(known.begin(), known.end(), m) == known.end())
                out.push_back(
                    at + "\"" + m +
                    "\" is not a method of RFC 9110 or RFC 5789 (PATCH): if it is a typo, the method "
                    "meant is not guarded");
            else if ((m == "GET" || m == "HEAD") && idem.mode == route_mode::enforce)
                out.push_back(at + m + " is a safe method (RFC 9110 9.2.1): a keyed " + m +
                              " is recorded and its answer replayed instead of read again");
        }
    }
}

} // namespace

std::vector<std::string> warnings(const config& cfg)
{
    std::vector<std::string> out;
    for (const auto& up : cfg.upstreams)
        if (up.tls.enabled && !up.tls.verify)
            out.push_back(
                "upstreams." + up.name +
                ".tls.verify: false: the upstream's certificate and name are not checked, so anyone "
                "on the network path can impersonate it (for testing only)");
    if (cfg.tracing.enabled() && cfg.tracing.tls.enabled && !cfg.tracing.tls.verify)
        out.push_back("tracing.tls.verify: false: the collector's certificate and name are not checked, so "
                      "anyone on the network path can receive the spans (for testing only)");
    for (const auto& w : cfg.tracing.environment_warnings)
        out.push_back("tracing: " + w);
    // Each guarded route against its own effective timeouts (route over upstream over global);
    // a tenant's lock_ttl, which applies on every route, against the longest of them.
    auto bound_text = [](const route_timeouts& t) {
        return "2 x upstream_connect " + detail::duration_text(t.upstream_connect) + " + upstream_response " +
               detail::duration_text(t.upstream_response) + " + 1s (" +
               std::to_string(t.exchange_bound().count()) + "ms)";
    };
    std::optional<std::size_t> longest; // the route with the longest bound
    for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
        const auto& route = cfg.routes[i];
        const auto& idem = route.idempotency;
        const auto& t = route.effective_timeouts;
        if (!longest || t.exchange_bound() > cfg.routes[*longest].effective_timeouts.exchange_bound())
            longest = i;
        if (!idem.enabled || idem.lock_ttl >= t.exchange_bound())
            continue;
        out.push_back("routes[" + std::to_string(i) + "].idempotency.lock_ttl: " +
                      std::to_string(idem.lock_ttl.count()) + "ms is not above the route's " + bound_text(t) +
                      ": the lock can expire while the first request still runs, and a duplicate would "
                      "execute too");
    }
    for (const auto& [name, tenant] : cfg.tenants) {
        if (!longest)
            break;
        const auto& t = cfg.routes[*longest].effective_timeouts;
        if (!tenant.lock_ttl || *tenant.lock_ttl >= t.exchange_bound())
            continue;
        out.push_back("tenants." + name + ".lock_ttl: " + std::to_string(tenant.lock_ttl->count()) +
                      "ms is not above routes[" + std::to_string(*longest) + "]'s " + bound_text(t) +
                      ": the lock can expire while the first request still runs, and a duplicate would "
                      "execute too");
    }
    for (std::size_t i = 0; i < cfg.routes.size(); ++i)
        if (cfg.store.type() != store_type::memory && cfg.store.hash_keys &&
            cfg.routes[i].idempotency.reconcile.enabled())
            out.push_back(
                "routes[" + std::to_string(i) +
                "].idempotency.reconcile.path: with store.hash_keys a held key's probe still keeps its "
                "key and tenant in the store unhashed, while the key is held");
    route_cover_warnings(cfg, out);
    method_warnings(cfg, out);
    return out;
}

} // namespace idemgate::config
