// SPDX-License-Identifier: Apache-2.0
// Timeouts where they belong (keys.hpp): upstreams.<name>.timeouts and routes[].timeouts beat the
// global timeouts.* for one upstream or route, and each route's effective values are resolved
// once, when the whole file is read, so that no request looks through three levels.
#include "keys.hpp"

#include <string>

namespace idemgate::config::detail {

namespace {

// A value that beats the level below it: absent = inherited; 0 is refused like the global one's.
struct an_override {
    void read(loader& l, const map_view& m, std::string_view k, std::optional<duration>& out) const
    {
        if (!m.find(k))
            return;
        duration d{0};
        a_duration{}.read(l, m, k, d);
        if (d.count() > 0)
            out = d;
    }
    void print(YAML::Emitter& out, const std::optional<duration>& v) const { out << duration_text(*v); }
    bool shown(const std::optional<duration>& v) const { return v.has_value(); }
};

// A key that exists only in the global timeouts: a message that says so, rather than "unknown
// key". `why` ends the message.
struct not_here {
    const char* why;
    void read(loader& l, const map_view& m, std::string_view k, timeout_overrides&) const
    {
        if (m.find(k))
            l.problem(m.path_of(k), std::string(why) + " (set timeouts." + std::string(k) + ")");
    }
    void print(YAML::Emitter&, const timeout_overrides&) const {}
};

using t = timeout_overrides;
key_options<t> refused()
{
    return {.printed = false, .listed = false};
}
constexpr const char* before_route = "is global only: it runs before a request's route is known";
constexpr const char* connection =
    "is global only: it bounds writes to a client connection, which serves every route";
constexpr const char* process = "is global only: it bounds the whole gateway's stop";

} // namespace

const section<t>& upstream_timeouts_keys()
{
    static const section<t> keys{
        {"upstream_connect", &t::upstream_connect, an_override{}},
        {"upstream_response", &t::upstream_response, an_override{}},
        {"body_read", whole, not_here{"is set per route or globally, not per upstream"}, refused()},
        {"header_read", whole, not_here{before_route}, refused()},
        {"idle", whole, not_here{before_route}, refused()},
        {"client_write", whole, not_here{connection}, refused()},
        {"drain", whole, not_here{process}, refused()},
    };
    return keys;
}

const section<t>& route_timeouts_keys()
{
    static const section<t> keys{
        {"upstream_connect", &t::upstream_connect, an_override{}},
        {"upstream_response", &t::upstream_response, an_override{}},
        {"body_read", &t::body_read, an_override{}},
        {"header_read", whole, not_here{before_route}, refused()},
        {"idle", whole, not_here{before_route}, refused()},
        {"client_write", whole, not_here{connection}, refused()},
        {"drain", whole, not_here{process}, refused()},
    };
    return keys;
}

void resolve_timeouts(config& cfg)
{
    const auto& global = cfg.timeouts;
    for (auto& route : cfg.routes) {
        const timeout_overrides none;
        const auto& up =
            route.upstream_index < cfg.upstreams.size() ? cfg.upstreams[route.upstream_index].timeouts : none;
        const auto& own = route.timeouts;
        auto& e = route.effective_timeouts;
        e.upstream_connect =
            own.upstream_connect.value_or(up.upstream_connect.value_or(global.upstream_connect));
        e.upstream_response =
            own.upstream_response.value_or(up.upstream_response.value_or(global.upstream_response));
        e.body_read = own.body_read.value_or(global.body_read);
    }
}

} // namespace idemgate::config::detail
