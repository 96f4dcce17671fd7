// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kinds of `listen` and `admin_listen`: host:port, or for listen a map with the balancers
// whose word on the client's address is believed (trusted_proxies, proxy_protocol).
#include "keys.hpp"

#include <string>
#include <vector>

namespace idemgate::config::detail {

// listen.trusted_proxies: a list of networks, each checked on its own.
struct a_network_list {
    void read(loader& l, const map_view& m, std::string_view k, std::vector<cidr>& out) const
    {
        const auto* node = m.find(k);
        if (!node)
            return;
        auto path = m.path_of(k);
        if (!node->IsSequence()) {
            l.problem(path, std::string("expected a list of networks (e.g. [10.0.0.0/8, ::1/128]), got ") +
                                kind_name(*node));
            return;
        }
        for (std::size_t i = 0; i < node->size(); ++i) {
            auto item_path = path + "[" + std::to_string(i) + "]";
            auto text = l.scalar((*node)[i], item_path, "a network (address/prefix)");
            if (!text)
                continue;
            std::string why;
            if (auto network = parse_cidr(*text, &why))
                out.push_back(*network);
            else
                l.problem(item_path, why);
        }
    }
    void print(YAML::Emitter& out, const std::vector<cidr>& networks) const
    {
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& n : networks)
            out << cidr_text(n);
        out << YAML::EndSeq;
    }
};

// listen as a map: its address and who may say who the client is (listen_keys.cpp).
const section<config>& listen_keys();

// listen: host:port, or a map (address, trusted_proxies, proxy_protocol). Printed as host:port
// while nothing but the address is set.
struct endpoint_or_map {
    void read(loader& l, const map_view& m, std::string_view k, config& cfg) const
    {
        const auto* node = m.find(k);
        if (!node || !node->IsMap())
            an_endpoint{}.read(l, m, k, cfg.listen);
        else
            listen_keys().read(l, *node, m.path_of(k), cfg);
    }
    void print(YAML::Emitter& out, const config& cfg) const
    {
        if (cfg.listen_proxy == listen_proxy_config{})
            an_endpoint{}.print(out, cfg.listen);
        else
            listen_keys().print(out, cfg);
    }
    void list(const std::string& path, bool restart, std::vector<key_description>& out) const
    {
        listen_keys().list(path, restart, out);
    }
};

// admin_listen: host:port only. The admin API is for operators, not for clients behind a
// balancer: trusted_proxies and proxy_protocol are listen's.
struct admin_endpoint {
    void read(loader& l, const map_view& m, std::string_view k, endpoint& out) const
    {
        if (const auto* node = m.find(k); node && node->IsMap()) {
            l.problem(m.path_of(k), "takes host:port only (trusted_proxies and proxy_protocol are keys of "
                                    "listen, the client listener)");
            return;
        }
        an_endpoint{}.read(l, m, k, out);
    }
    void print(YAML::Emitter& out, const endpoint& v) const { an_endpoint{}.print(out, v); }
};

} // namespace idemgate::config::detail
