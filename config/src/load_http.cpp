// SPDX-License-Identifier: Apache-2.0
#include "loader.hpp"

#include <limits>
#include <string>
#include <utility>

namespace idemgate::config::detail {

void loader::load_upstreams(const map_view& top, std::vector<upstream_config>& upstreams)
{
    // Names are the operator's own, so any key is allowed at this level.
    map_view names(*this, child(top, "upstreams"), "upstreams", {});
    for (const auto& [name, node] : names.entries()) {
        upstream_config upstream;
        upstream.name = name;
        map_view map(*this, node, names.path_of(name),
                     {"address", "addresses", "max_idle_connections", "balance", "resolve_every",
                      "eject_after_failures", "eject_for", "hosts_file", "tls"});
        if (name.empty())
            problem(names.path(), "an upstream name must not be empty");
        load_upstream_addresses(map, node, upstream);
        read_int(map, "max_idle_connections", upstream.max_idle_connections, 0,
                 std::numeric_limits<std::size_t>::max());
        read_choice(
            map, "balance", "allowed",
            {{"round_robin", balance_mode::round_robin}, {"least_pending", balance_mode::least_pending}},
            upstream.balance);
        read_duration(map, "resolve_every", upstream.resolve_every, true);
        read_int(map, "eject_after_failures", upstream.eject_after_failures, 0, 1000);
        read_duration(map, "eject_for", upstream.eject_for);
        read_string(map, "hosts_file", upstream.hosts_file);
        load_client_tls(map, map.path_of("tls"), upstream.tls, "plain HTTP"); // HTTPS
        upstreams.push_back(std::move(upstream));
    }
}

// upstreams.<name>.address (one host:port, as before fleets) or .addresses (a list): exactly
// one of them. Names are resolved by the gateway (every A/AAAA result joins the fleet).
void loader::load_upstream_addresses(const map_view& map, const YAML::Node& node, upstream_config& upstream)
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
            problem(map.path_of("address"), "required key is missing (or addresses: a list of host:port)");
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

// tls: TLS termination on `listen`. Files are checked for readability here; that
// they hold PEM certificates and a matching key is checked where OpenSSL loads them
// (gateway::check_tls_config, run by --check and at start-up).
void loader::load_listen_tls(const map_view& top, std::optional<listen_tls_config>& out)
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
    for (auto [key, file] : {std::pair{"cert_file", &tls.cert_file}, std::pair{"key_file", &tls.key_file}}) {
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
            problem(map.path_of("min_version"), quote(*text) + " is not allowed (use \"1.2\" or \"1.3\")");
    }
    read_choice(map, "client_auth", "allowed",
                {{"none", client_auth_mode::none},
                 {"optional", client_auth_mode::optional},
                 {"required", client_auth_mode::required}},
                tls.client_auth);
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

// http2: the HTTP/2 codec's connection settings (RFC 9113 6.5.2 bounds the window and frame
// sizes).
void loader::load_http2(const map_view& top, http2_config& http2)
{
    map_view map(*this, child(top, "http2"), "http2",
                 {"enabled", "cleartext", "max_concurrent_streams", "initial_window_size", "max_frame_size",
                  "max_header_list_size", "idle_timeout"});
    read_bool(map, "enabled", http2.enabled);
    read_bool(map, "cleartext", http2.cleartext);
    read_int(map, "max_concurrent_streams", http2.max_concurrent_streams, 1, 100000);
    auto bounded_size = [&](std::string_view key, std::size_t& out, std::size_t min, std::size_t max,
                            const char* range) {
        std::size_t value = out;
        read_size(map, key, value, false);
        if (value < min || value > max)
            problem(map.path_of(key), std::string("must be within ") + range);
        else
            out = value;
    };
    bounded_size("initial_window_size", http2.initial_window_size, 1, 0x7fffffff, "1B-2GiB (2^31-1 bytes)");
    bounded_size("max_frame_size", http2.max_frame_size, 16384, 16777215, "16KiB-16MiB (2^24-1 bytes)");
    bounded_size("max_header_list_size", http2.max_header_list_size, 1, 16 * 1024 * 1024, "1B-16MiB");
    read_duration(map, "idle_timeout", http2.idle_timeout);
    if (http2.cleartext && !http2.enabled)
        problem(map.path_of("cleartext"), "set while http2.enabled is false (HTTP/2 is off)");
}

} // namespace idemgate::config::detail
