// SPDX-License-Identifier: Apache-2.0
// The HTTP side's keys (keys.hpp): upstreams.<name> with their TLS, TLS on `listen`, http2.
#include "keys.hpp"

#include <limits>
#include <string>
#include <utility>

namespace idemgate::config::detail {

namespace {

// upstreams.<name>.address (one host:port, as before fleets) or .addresses (a list): exactly
// one of them. Names are resolved by the gateway (every A/AAAA result joins the fleet).
struct upstream_addresses {
    void read(loader& l, const map_view& map, std::string_view, upstream_config& upstream) const
    {
        const auto* one = map.find("address");
        const auto* list = map.find("addresses");
        if (one && list) {
            l.problem(map.path_of("addresses"),
                      "set together with " + map.path_of("address") + " (use one of them)");
            return;
        }
        if (!one && !list) {
            if (map.is_map())
                l.problem(map.path_of("address"),
                          "required key is missing (or addresses: a list of host:port)");
            return;
        }
        if (one) {
            an_endpoint{}.read(l, map, "address", upstream.address);
            if (!upstream.address.host.empty())
                upstream.addresses.push_back(upstream.address);
            return;
        }
        auto path = map.path_of("addresses");
        if (!list->IsSequence()) {
            l.problem(path, std::string("expected a list of host:port, got ") + kind_name(*list));
            return;
        }
        if (list->size() == 0) {
            l.problem(path, "must list at least one address (host:port)");
            return;
        }
        if (list->size() > max_upstream_addresses) {
            l.problem(path, std::to_string(list->size()) + " addresses; at most " +
                                std::to_string(max_upstream_addresses) + " are allowed");
            return;
        }
        for (std::size_t i = 0; i < list->size(); ++i) {
            auto item_path = path + "[" + std::to_string(i) + "]";
            auto text = l.scalar((*list)[i], item_path, "an endpoint (host:port)");
            if (!text)
                continue;
            auto checked = check_endpoint(*text);
            if (!checked.value) {
                l.problem(item_path, checked.problem);
                continue;
            }
            bool duplicate = false;
            for (std::size_t j = 0; j < upstream.addresses.size() && !duplicate; ++j)
                duplicate = upstream.addresses[j].to_string() == checked.value->to_string();
            if (duplicate) {
                l.problem(item_path, quote(*text) + " is listed twice");
                continue;
            }
            upstream.addresses.push_back(std::move(*checked.value));
        }
        if (!upstream.addresses.empty())
            upstream.address = upstream.addresses.front();
    }
    void print(YAML::Emitter&, const upstream_config&) const {}
};

const section<upstream_config>& upstream_keys()
{
    using u = upstream_config;
    static const auto tls_keys = client_tls_section("plain HTTP"); // HTTPS
    static const section<u> keys{
        // `address:` is printed as the `addresses:` list it means.
        {"address", whole, upstream_addresses{}, {.printed = false}},
        {"addresses", &u::addresses, a_list<endpoint>{}, {.read_here = false}},
        {"max_idle_connections", &u::max_idle_connections, an_int{}},
        {"balance", &u::balance, a_choice{"allowed"}},
        {"resolve_every", &u::resolve_every, a_duration{.zero = true}},
        {"resolve", &u::resolve, a_choice{"allowed"}},
        {"eject_after_failures", &u::eject_after_failures, an_int{0, 1000}},
        {"eject_for", &u::eject_for, a_duration{}},
        {"hosts_file", &u::hosts_file, a_string{.file = true}},
        {"tls", &u::tls, nested{tls_keys}},
        {"timeouts", &u::timeouts, timeout_map{{upstream_timeouts_keys()}}},
    };
    return keys;
}

// Files are checked for readability here; that they hold PEM certificates and a matching key is
// checked where OpenSSL loads them (gateway::check_tls_config and store::check_backend_config,
// run by --check and at start-up).
void check_listen_file(loader& l, const map_view& map, std::string_view key, const std::string& file)
{
    if (file.empty())
        l.problem(map.path_of(key), map.find(key) ? "must not be empty" : "required key is missing");
    else
        l.check_readable(map.path_of(key), file);
}

struct tls_version {
    void read(loader& l, const map_view& map, std::string_view key, int& out) const
    {
        auto text = l.scalar(map, key, "a TLS version");
        if (!text)
            return;
        if (*text == "1.2")
            out = 0x0303;
        else if (*text == "1.3")
            out = 0x0304;
        else
            l.problem(map.path_of(key), quote(*text) + " is not allowed (use \"1.2\" or \"1.3\")");
    }
    void print(YAML::Emitter& out, int v) const { out << (v == 0x0304 ? "1.3" : "1.2"); }
};

// tls: TLS termination on `listen`.
const section<listen_tls_config>& listen_tls_keys()
{
    using t = listen_tls_config;
    static const section<t> keys{
        {
            {"cert_file",
             &t::cert_file,
             a_string{.file = true},
             {.then = [](loader& l, const map_view& m,
                         t& tls) { check_listen_file(l, m, "cert_file", tls.cert_file); }}},
            {"key_file",
             &t::key_file,
             a_string{.file = true},
             {.then = [](loader& l, const map_view& m,
                         t& tls) { check_listen_file(l, m, "key_file", tls.key_file); }}},
            {"min_version", &t::min_version, tls_version{}},
            {"client_ca_file", &t::client_ca_file, a_string{.file = true}},
            {"client_auth", &t::client_auth, a_choice{"allowed"}},
        },
        [](loader& l, const map_view& map, t& tls) {
            if (tls.client_auth != client_auth_mode::none && tls.client_ca_file.empty())
                l.problem(map.path_of("client_auth"),
                          "needs tls.client_ca_file (the CA client certificates are verified against)");
            if (tls.client_auth == client_auth_mode::none && !tls.client_ca_file.empty())
                l.problem(map.path_of("client_ca_file"),
                          "set while tls.client_auth is none (no client certificate "
                          "is asked for); set client_auth: optional or required, "
                          "or remove it");
            if (!tls.client_ca_file.empty())
                l.check_readable(map.path_of("client_ca_file"), tls.client_ca_file);
        }};
    return keys;
}

// With enabled false no other key may be set (the connection would be `plain`); with it true, a
// certificate needs its key and the reverse, the files are readable, the name is one.
void check_client_tls(loader& l, const map_view& map, client_tls_config& tls, std::string_view plain)
{
    if (!tls.enabled) {
        for (auto [key, set] :
             {std::pair{"ca_file", !tls.ca_file.empty()}, std::pair{"cert_file", !tls.cert_file.empty()},
              std::pair{"key_file", !tls.key_file.empty()},
              std::pair{"server_name", !tls.server_name.empty()}, std::pair{"verify", !tls.verify}})
            if (set)
                l.problem(map.path_of(key), "set while " + map.path_of("enabled") +
                                                " is false (the connection would be " + std::string(plain) +
                                                "); set enabled: true or remove it");
        return;
    }
    if (!tls.cert_file.empty() && tls.key_file.empty())
        l.problem(map.path_of("cert_file"), "needs " + map.path_of("key_file") +
                                                " (a client certificate is useless without its private key)");
    if (tls.cert_file.empty() && !tls.key_file.empty())
        l.problem(map.path_of("key_file"),
                  "needs " + map.path_of("cert_file") + " (the client certificate of this private key)");
    for (auto [key, file] : {std::pair{"ca_file", &tls.ca_file}, std::pair{"cert_file", &tls.cert_file},
                             std::pair{"key_file", &tls.key_file}})
        if (!file->empty())
            l.check_readable(map.path_of(key), *file);
    bool name_ok = true;
    for (char c : tls.server_name)
        name_ok = name_ok && (is_host_name_char(c) || is_ipv6_char(c));
    if (!name_ok)
        l.problem(map.path_of("server_name"), quote(tls.server_name) + " is not a host name or IP address");
}

} // namespace

section<client_tls_config> client_tls_section(std::string_view plain)
{
    using t = client_tls_config;
    return {{
                {"enabled", &t::enabled, a_bool{}},
                {"ca_file", &t::ca_file, a_string{.file = true}},
                {"cert_file", &t::cert_file, a_string{.file = true}},
                {"key_file", &t::key_file, a_string{.file = true}},
                {"server_name", &t::server_name, a_string{}},
                {"verify", &t::verify, a_bool{}},
            },
            [plain](loader& l, const map_view& map, t& tls) { check_client_tls(l, map, tls, plain); }};
}

void optional_listen_tls::read(loader& l, const map_view& m, std::string_view k,
                               std::optional<listen_tls_config>& out) const
{
    if (const auto* node = m.find(k)) {
        listen_tls_config tls;
        listen_tls_keys().read(l, *node, m.path_of(k), tls);
        out = std::move(tls);
    }
}

void optional_listen_tls::print(YAML::Emitter& out, const std::optional<listen_tls_config>& v) const
{
    listen_tls_keys().print(out, *v);
}

void optional_listen_tls::list(const std::string& path, bool restart, std::vector<key_description>& out) const
{
    listen_tls_keys().list(path, restart, out);
}

// Names are the operator's own, so any key is allowed at this level.
void upstream_map::read(loader& l, const map_view& m, std::string_view k,
                        std::vector<upstream_config>& out) const
{
    map_view names(l, loader::child(m, k), m.path_of(k), {});
    for (const auto& [name, node] : names.entries()) {
        if (name.empty())
            l.problem(names.path(), "an upstream name must not be empty");
        upstream_config upstream;
        upstream.name = name;
        upstream_keys().read(l, node, names.path_of(name), upstream);
        out.push_back(std::move(upstream));
    }
}

void upstream_map::print(YAML::Emitter& out, const std::vector<upstream_config>& v) const
{
    out << YAML::BeginMap;
    for (const auto& u : v) {
        out << YAML::Key << u.name << YAML::Value;
        upstream_keys().print(out, u);
    }
    out << YAML::EndMap;
}

void upstream_map::list(const std::string& path, bool restart, std::vector<key_description>& out) const
{
    list_named(upstream_keys(), path, restart, out);
}

// http2: the HTTP/2 codec's connection settings (RFC 9113 6.5.2 bounds the window and frame
// sizes).
const section<http2_config>& http2_keys()
{
    using h = http2_config;
    static const section<h> keys{
        {
            {"enabled", &h::enabled, a_bool{}},
            {"cleartext", &h::cleartext, a_bool{}},
            {"max_concurrent_streams", &h::max_concurrent_streams, an_int{1, 100000}},
            {"initial_window_size", &h::initial_window_size,
             a_size{.zero = false, .min = 1, .max = 0x7fffffff, .bounds = "within 1B-2GiB (2^31-1 bytes)"}},
            {"max_frame_size", &h::max_frame_size,
             a_size{.zero = false,
                    .min = 16384,
                    .max = 16777215,
                    .bounds = "within 16KiB-16MiB (2^24-1 bytes)"}},
            {"max_header_list_size", &h::max_header_list_size,
             a_size{.zero = false, .min = 1, .max = 16 * 1024 * 1024, .bounds = "within 1B-16MiB"}},
            {"idle_timeout", &h::idle_timeout, a_duration{}},
        },
        [](loader& l, const map_view& map, h& http2) {
            if (http2.cleartext && !http2.enabled)
                l.problem(map.path_of("cleartext"), "set while http2.enabled is false (HTTP/2 is off)");
        }};
    return keys;
}

} // namespace idemgate::config::detail
