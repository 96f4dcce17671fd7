// SPDX-License-Identifier: Apache-2.0
// Redis Cluster's key space: the slot of a key (CRC16 of its hash tag), MOVED/ASK redirections,
// the slot map read from CLUSTER SHARDS, and the node list the metrics show. No I/O here.
#include "redis/client/redis_cluster.hpp"

#include <charconv>
#include <hiredis/hiredis.h>

namespace idemgate::store::detail {

namespace {

std::uint16_t crc16_xmodem(std::string_view data) noexcept
{
    std::uint16_t crc = 0;
    for (char ch : data) {
        crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(ch) << 8);
        for (int i = 0; i < 8; ++i)
            crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021)
                                 : static_cast<std::uint16_t>(crc << 1);
    }
    return crc;
}

std::string_view str(const redisReply* r) noexcept
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)
               ? std::string_view(r->str, r->len)
               : std::string_view{};
}

// The value for `name` in a RESP2 flat map (key, value, key, value ...), or nullptr.
const redisReply* field(const redisReply& map, std::string_view name) noexcept
{
    if (map.type != REDIS_REPLY_ARRAY)
        return nullptr;
    for (std::size_t i = 0; i + 1 < map.elements; i += 2)
        if (str(map.element[i]) == name)
            return map.element[i + 1];
    return nullptr;
}

} // namespace

std::uint16_t cluster_slot(std::string_view key) noexcept
{
    auto open = key.find('{');
    if (open != std::string_view::npos) {
        auto close = key.find('}', open + 1);
        if (close != std::string_view::npos && close > open + 1)
            key = key.substr(open + 1, close - open - 1);
    }
    return static_cast<std::uint16_t>(crc16_xmodem(key) % cluster_slots);
}

std::optional<cluster_redirect> parse_redirect(std::string_view text)
{
    cluster_redirect out;
    if (text.starts_with("MOVED "))
        text.remove_prefix(6);
    else if (text.starts_with("ASK ")) {
        out.ask = true;
        text.remove_prefix(4);
    } else
        return std::nullopt;
    auto space = text.find(' ');
    if (space == std::string_view::npos)
        return std::nullopt;
    unsigned slot = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + space, slot);
    if (ec != std::errc{} || end != text.data() + space || slot >= cluster_slots)
        return std::nullopt;
    out.slot = static_cast<std::uint16_t>(slot);
    auto address = text.substr(space + 1);
    auto colon = address.rfind(':');
    if (colon == std::string_view::npos || colon == 0)
        return std::nullopt;
    unsigned port = 0;
    auto port_text = address.substr(colon + 1);
    auto [pend, pec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (pec != std::errc{} || pend != port_text.data() + port_text.size() || port == 0 || port > 65535)
        return std::nullopt;
    out.to.host = std::string(address.substr(0, colon));
    out.to.port = static_cast<std::uint16_t>(port);
    return out;
}

std::size_t slot_map::covered_slots() const noexcept
{
    std::size_t n = 0;
    for (auto o : owner)
        n += o >= 0 ? 1 : 0;
    return n;
}

std::optional<slot_map> parse_cluster_shards(const redisReply& reply, std::string& why, bool tls)
{
    if (reply.type != REDIS_REPLY_ARRAY) {
        why = "CLUSTER SHARDS: not an array";
        return std::nullopt;
    }
    slot_map m;
    for (std::size_t s = 0; s < reply.elements; ++s) {
        const auto& shard = *reply.element[s];
        const auto* slots = field(shard, "slots");
        const auto* nodes = field(shard, "nodes");
        if (!slots || !nodes || slots->type != REDIS_REPLY_ARRAY || nodes->type != REDIS_REPLY_ARRAY ||
            slots->elements % 2 != 0) {
            why = "CLUSTER SHARDS: a shard without slots or nodes";
            return std::nullopt;
        }
        if (slots->elements == 0)
            continue; // a primary without slots serves nothing
        const redisReply* primary = nullptr;
        for (std::size_t n = 0; n < nodes->elements; ++n)
            if (str(field(*nodes->element[n], "role")) == "master")
                primary = nodes->element[n];
        if (!primary)
            continue; // no primary right now: its slots stay uncovered
        config::endpoint ep;
        auto endpoint = str(field(*primary, "endpoint"));
        auto ip = str(field(*primary, "ip"));
        ep.host = std::string(!endpoint.empty() && endpoint != "?" ? endpoint : ip);
        // A node lists "port" (plain TCP) and/or "tls-port"; a TLS client needs the latter.
        // Without "tls-port", a TLS-only node (tls-cluster yes, port 0) announces its TLS port
        // as "port".
        const auto* port = field(*primary, "port");
        if (tls) {
            if (const auto* tls_port = field(*primary, "tls-port"))
                port = tls_port;
        }
        if (ep.host.empty() || !port || port->type != REDIS_REPLY_INTEGER || port->integer <= 0 ||
            port->integer > 65535) {
            why = "CLUSTER SHARDS: a primary without an address";
            return std::nullopt;
        }
        ep.port = static_cast<std::uint16_t>(port->integer);
        auto index = static_cast<std::int16_t>(m.primaries.size());
        m.primaries.push_back(ep);
        m.online.push_back(str(field(*primary, "health")) == "online");
        for (std::size_t i = 0; i < slots->elements; i += 2) {
            const auto* lo = slots->element[i];
            const auto* hi = slots->element[i + 1];
            if (lo->type != REDIS_REPLY_INTEGER || hi->type != REDIS_REPLY_INTEGER || lo->integer < 0 ||
                hi->integer >= static_cast<long long>(cluster_slots) || lo->integer > hi->integer) {
                why = "CLUSTER SHARDS: a bad slot range";
                return std::nullopt;
            }
            for (auto slot = lo->integer; slot <= hi->integer; ++slot)
                m.owner[static_cast<std::size_t>(slot)] = index;
        }
    }
    return m;
}

} // namespace idemgate::store::detail

namespace idemgate::store {

void redis_stats::set_cluster_nodes(std::vector<cluster_node> nodes)
{
    std::lock_guard lock(cluster_nodes_mutex_);
    cluster_nodes_ = std::move(nodes);
}

std::vector<redis_stats::cluster_node> redis_stats::cluster_nodes() const
{
    std::lock_guard lock(cluster_nodes_mutex_);
    return cluster_nodes_;
}

} // namespace idemgate::store
