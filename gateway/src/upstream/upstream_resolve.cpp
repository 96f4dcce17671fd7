// SPDX-License-Identifier: Apache-2.0
// Looking an upstream's configured addresses up: IP literals, the hosts_file, the system resolver
// (blocking and bounded per name at start-up, --check and reload; asynchronous and bounded per
// round in the background).
#include "upstream/name_lookup.hpp"
#include "upstream/upstream_fleet.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <fstream>
#include <idemgate/common/use_tuple.hpp>
#include <optional>
#include <sstream>

namespace idemgate::gateway {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// How long one re-resolution round may take (getaddrinfo runs on Asio's resolver thread; a
// round that takes longer counts as failed and keeps the previous addresses).
constexpr auto resolve_deadline = std::chrono::seconds(5);

// upstreams.<name>.hosts_file: nullopt when it is not set; else the addresses the file lists for
// `host` (hosts(5) lines "IP name [alias...]", '#' comments), read again at every resolution,
// empty with `error` set when it lists none or cannot be read.
std::optional<std::vector<asio::ip::address>> hosts_file_lookup(const std::string& file,
                                                                const std::string& host, std::string& error)
{
    if (file.empty())
        return std::nullopt;
    std::vector<asio::ip::address> out;
    std::ifstream in(file);
    if (!in) {
        error = "cannot read hosts_file " + file;
        return out;
    }
    std::string line;
    while (std::getline(in, line)) {
        line = line.substr(0, line.find('#'));
        std::istringstream fields(line);
        std::string ip, name;
        if (!(fields >> ip))
            continue;
        bool match = false;
        while (fields >> name)
            match = match || name == host;
        error_code ec;
        auto address = asio::ip::make_address(ip, ec);
        if (match && !ec)
            out.push_back(address);
    }
    if (out.empty())
        error = "\"" + host + "\" is not in hosts_file " + file;
    return out;
}

void add_endpoint(resolution& r, const tcp::endpoint& ep, const std::string& host)
{
    for (const auto& e : r.endpoints)
        if (e.first == ep)
            return; // the same address under two names (or A and AAAA duplicates): once
    if (r.endpoints.size() < config::max_upstream_addresses)
        r.endpoints.emplace_back(ep, host);
}

// One configured address, looked up without a resolver when possible: an IP literal, or the
// upstream's hosts_file. nullopt: it needs the resolver.
std::optional<std::vector<tcp::endpoint>> resolve_locally(const config::endpoint& ep,
                                                          const std::string& hosts_file, std::string& error)
{
    error_code ec;
    auto ip = asio::ip::make_address(ep.host, ec);
    if (!ec)
        return std::vector<tcp::endpoint>{tcp::endpoint(ip, ep.port)};
    auto listed = hosts_file_lookup(hosts_file, ep.host, error);
    if (!listed)
        return std::nullopt;
    std::vector<tcp::endpoint> out;
    for (const auto& a : *listed)
        out.emplace_back(a, ep.port);
    return out;
}

std::string resolve_error(const config::endpoint& ep, const std::string& why)
{
    return "cannot resolve " + ep.to_string() + (why.empty() ? std::string() : ": " + why);
}

} // namespace

// The same as resolve_now, with the resolver's asynchronous lookups under one deadline.
asio::awaitable<resolution> resolve_async(asio::io_context& control, const config::upstream_config& up)
{
    struct entry {
        std::vector<tcp::endpoint> endpoints;
        std::string error;
    };
    struct state {
        state(asio::io_context& ioc, std::size_t n) : timer(ioc), entries(n) {}
        asio::steady_timer timer;
        std::vector<entry> entries;
        std::vector<std::unique_ptr<tcp::resolver>> resolvers;
        std::size_t outstanding = 0;
    };
    auto st = std::make_shared<state>(control, up.addresses.size());
    for (std::size_t i = 0; i < up.addresses.size(); ++i) {
        const auto& ep = up.addresses[i];
        auto& e = st->entries[i];
        if (auto local = resolve_locally(ep, up.hosts_file, e.error)) {
            e.endpoints = std::move(*local);
            continue;
        }
        ++st->outstanding;
        auto& resolver = *st->resolvers.emplace_back(std::make_unique<tcp::resolver>(control));
        resolver.async_resolve(ep.host, std::to_string(ep.port),
                               [st, i](const error_code& ec, const tcp::resolver::results_type& results) {
                                   auto& found = st->entries[i];
                                   if (ec)
                                       found.error = ec.message();
                                   for (const auto& r : results)
                                       found.endpoints.push_back(r.endpoint());
                                   if (--st->outstanding == 0)
                                       st->timer.cancel();
                               });
    }
    resolution r;
    if (st->outstanding > 0) {
        st->timer.expires_after(resolve_deadline);
        co_await st->timer.async_wait(use_tuple);
        if (st->outstanding > 0) {
            for (auto& resolver : st->resolvers)
                resolver->cancel();
            r.error = "resolution took longer than " + std::to_string(resolve_deadline.count()) + "s";
            co_return r;
        }
    }
    for (std::size_t i = 0; i < up.addresses.size(); ++i) {
        const auto& e = st->entries[i];
        if (e.endpoints.empty()) {
            r.error = resolve_error(up.addresses[i], e.error);
            r.endpoints.clear();
            co_return r;
        }
        for (const auto& ep : e.endpoints)
            add_endpoint(r, ep, up.addresses[i].host);
    }
    co_return r;
}

resolution resolve_now(const config::upstream_config& up)
{
    resolution r;
    for (const auto& ep : up.addresses) {
        std::string why;
        auto endpoints = resolve_locally(ep, up.hosts_file, why);
        if (!endpoints) {
            auto found = lookup_name(ep.host, ep.port, start_lookup_deadline);
            why = found.error;
            endpoints = std::move(found.endpoints);
        }
        if (endpoints->empty()) {
            r.error = resolve_error(ep, why);
            r.endpoints.clear();
            return r;
        }
        for (const auto& x : *endpoints)
            add_endpoint(r, x, ep.host);
    }
    return r;
}

} // namespace idemgate::gateway
