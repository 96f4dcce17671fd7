// SPDX-License-Identifier: Apache-2.0
#include "idempotency/held_note.hpp"

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>

namespace idemgate::gateway::detail {

namespace json = boost::json;

namespace {

std::optional<json::object> object_of(std::string_view text)
{
    boost::system::error_code ec;
    auto v = json::parse(json::string_view(text.data(), text.size()), ec);
    if (ec || !v.is_object())
        return std::nullopt;
    return std::move(v.get_object());
}

} // namespace

std::string_view held_label(std::string_view scope_tenant) noexcept
{
    return scope_tenant.substr(0, scope_tenant.find_first_of(std::string_view(" \x02", 2)));
}

std::string encode_held_note(const held_note& n)
{
    json::object o;
    o["route"] = n.route;
    o["held"] = n.held_unix_ms;
    o["attempt"] = n.attempt;
    o["principal"] = n.principal;
    o["route_key_space"] = n.route_key_space;
    return json::serialize(o);
}

std::optional<held_note> decode_held_note(std::string_view text)
{
    auto o = object_of(text);
    if (!o)
        return std::nullopt;
    held_note n;
    const auto* route = o->if_contains("route");
    const auto* held = o->if_contains("held");
    const auto* attempt = o->if_contains("attempt");
    const auto* principal = o->if_contains("principal");
    const auto* own_space = o->if_contains("route_key_space");
    if (!route || !route->is_string() || !held || !held->is_int64())
        return std::nullopt;
    n.route = std::string(route->get_string());
    n.held_unix_ms = held->get_int64();
    if (attempt && attempt->is_uint64())
        n.attempt = attempt->get_uint64();
    else if (attempt && attempt->is_int64() && attempt->get_int64() > 0)
        n.attempt = static_cast<std::uint64_t>(attempt->get_int64());
    if (principal && principal->is_string())
        n.principal = std::string(principal->get_string());
    n.route_key_space = own_space && own_space->is_bool() && own_space->get_bool();
    return n;
}

std::string encode_held_seen(const held_seen& s)
{
    json::object o;
    o["at"] = s.at_unix_ms;
    o["seen"] = s.seen;
    return json::serialize(o);
}

std::optional<held_seen> decode_held_seen(std::string_view text)
{
    auto o = object_of(text);
    if (!o)
        return std::nullopt;
    const auto* at = o->if_contains("at");
    const auto* seen = o->if_contains("seen");
    if (!at || !at->is_int64() || !seen || !seen->is_string())
        return std::nullopt;
    return held_seen{at->get_int64(), std::string(seen->get_string())};
}

} // namespace idemgate::gateway::detail
