// SPDX-License-Identifier: Apache-2.0
// GET /admin/v1/held and POST /admin/v1/records/resolve (held_api.hpp).
#include "admin/held_api.hpp"

#include "admin/record_lookup.hpp"
#include "core/problem.hpp"
#include "idempotency/held_note.hpp"
#include "idempotency/refusal.hpp"

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>
#include <charconv>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/gateway/scope.hpp>
#include <idemgate/store/held_index.hpp>
#include <openssl/rand.h>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

constexpr std::size_t default_held_page = 100;
constexpr std::size_t max_held_page = 1000;
constexpr std::size_t max_reason_characters = 200;

response_type held_method_only(std::string_view base, std::string_view path, std::string_view method,
                               unsigned version)
{
    auto res = make_problem(
        base, {problems::method_not_allowed, std::string(path) + " answers " + std::string(method)}, version,
        true);
    res.set(http::field::allow, method);
    return res;
}

response_type held_bad_request(std::string_view base, std::string_view detail, unsigned version)
{
    return make_problem(base, {problems::bad_request, detail}, version, true);
}

std::optional<std::string> cursor_bytes(std::string_view hex)
{
    if (hex.size() % 2 != 0)
        return std::nullopt;
    std::string out;
    for (std::size_t i = 0; i < hex.size(); i += 2) {
        int hi = lower_hex_value(hex[i]);
        int lo = lower_hex_value(hex[i + 1]);
        if (hi < 0 || lo < 0)
            return std::nullopt;
        out.push_back(static_cast<char>(hi << 4 | lo));
    }
    return out;
}

// UTF-8 characters (code points) in `text`: its bytes that do not continue a sequence.
std::size_t utf8_characters(std::string_view text) noexcept
{
    std::size_t n = 0;
    for (unsigned char c : text)
        n += (c & 0xC0) != 0x80;
    return n;
}

// One held key as the list shows it. With store.hash_keys the store has the key's digest only:
// no key, and the tenant only when the list was filtered by it.
json::object held_json(const store::held_key& k, const std::string* filtered_tenant, std::int64_t now)
{
    json::object o;
    if (k.hashed)
        o["tenant"] = filtered_tenant ? json::value(*filtered_tenant) : json::value(nullptr);
    else
        o["tenant"] = k.label;
    o["key"] = k.hashed ? json::value(nullptr) : json::value(k.key);
    o["record_id"] = k.record_id;
    auto note = decode_held_note(k.note);
    const auto held = note ? note->held_unix_ms : k.held.created_unix_ms;
    o["route"] = note ? json::value(note->route) : json::value(nullptr);
    o["held_at"] = rfc3339_utc(held);
    o["age_ms"] = std::max<std::int64_t>(0, now - held);
    o["attempt"] = note && note->attempt > 0 ? json::value(note->attempt) : json::value(nullptr);
    o["principal"] = note && !note->principal.empty() ? json::value(note->principal) : json::value(nullptr);
    o["key_space"] = note && note->route_key_space ? "route" : "tenant";
    o["expires_in_ms"] = k.expires_in_ms;
    if (auto seen = decode_held_seen(k.seen))
        o["probe"] = json::object{{"last_at", rfc3339_utc(seen->at_unix_ms)}, {"last_seen", seen->seen}};
    else
        o["probe"] = nullptr;
    return o;
}

} // namespace

asio::awaitable<response_type> answer_held(gateway_context& ctx, store::session& store,
                                           const admin_request& req, std::string base)
{
    (void)ctx;
    const unsigned version = req.version();
    if (req.method() != http::verb::get && req.method() != http::verb::head)
        co_return held_method_only(base, "/admin/v1/held", "GET", version);
    auto params = query_params(req.target());
    if (!params)
        co_return held_bad_request(base, "the query string is not valid percent-encoding", version);
    std::optional<std::string> tenant;
    std::size_t limit = default_held_page;
    std::string after;
    for (const auto& [name, value] : *params) {
        if (name == "tenant") {
            tenant = value;
        } else if (name == "limit") {
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), limit);
            if (ec != std::errc{} || end != value.data() + value.size() || limit < 1 || limit > max_held_page)
                co_return held_bad_request(base, "limit must be a whole number from 1 to 1000", version);
        } else if (name == "cursor") {
            auto decoded = cursor_bytes(value);
            if (!decoded || decoded->empty())
                co_return held_bad_request(base, "cursor must be a next_cursor this endpoint gave", version);
            after = std::move(*decoded);
        } else {
            co_return held_bad_request(base, "unknown parameter " + name + " (tenant, limit, cursor)",
                                       version);
        }
    }
    auto* index = store.held();
    if (!index)
        co_return make_problem(base, {problems::store_unavailable, "the store keeps no index of held keys"},
                               version, true);
    const std::string label = tenant ? *tenant : std::string();
    auto page = co_await index->held_keys(label, tenant.has_value(), after, limit);
    if (page.ec)
        co_return make_problem(base, {problems::store_unavailable, "the store failed: " + page.ec.message()},
                               version, true);
    const auto now = log::now_unix_ms();
    json::array held;
    for (const auto& k : page.keys)
        held.push_back(held_json(k, tenant ? &*tenant : nullptr, now));
    json::object body;
    body["held"] = std::move(held);
    body["next_cursor"] = page.next.empty() ? json::value(nullptr) : json::value(to_hex(page.next));
    co_return json_answer(body, version);
}

namespace {

// What a resolve body asks, or the problem with it ("" when none).
struct resolve_request {
    std::string key;
    scope_parameters scope; // as /admin/v1/records takes them
    bool executed = false;
    unsigned status = 0;
    std::string reason;
};

std::string read_resolve(const json::object& o, const config::config& cfg, const std::string& key_secret,
                         resolve_request& out)
{
    for (const auto& [name, value] : o) {
        if (name == "key" || name == "tenant" || name == "cert_tenant" || name == "principal" ||
            name == "route" || name == "resolution" || name == "reason") {
            if (!value.is_string())
                return std::string(name) + " must be a string";
        }
    }
    auto text = [&](std::string_view name) {
        const auto* v = o.if_contains(name);
        return v ? std::string(v->get_string()) : std::string();
    };
    out.key = text("key");
    if (out.key.empty())
        return "key is required";
    for (const char* name : {"tenant", "cert_tenant", "principal"})
        if (o.contains(name))
            out.scope.emplace_back(name, text(name));
    if (const auto* c = o.if_contains("credential")) {
        if (key_secret.empty())
            return "credential given but store.key_secret_env is not set";
        if (c->is_string()) {
            out.scope.emplace_back("credential", std::string(c->get_string()));
        } else if (c->is_array()) {
            for (const auto& each : c->get_array()) {
                if (!each.is_string())
                    return "credential must be a string or an array of strings (one per credential header)";
                out.scope.emplace_back("credential", std::string(each.get_string()));
            }
        } else {
            return "credential must be a string or an array of strings (one per credential header)";
        }
        if (o.contains("principal"))
            return "give credential or principal, not both";
    }
    if (o.contains("principal") && !is_principal(text("principal")))
        return "principal must be as the access log shows it: per credential header 64 lower-case hex digits "
               "or \"-\", joined by ','";
    // The route joins the scope as the filter joins it: only for a route with its own key space.
    if (o.contains("route")) {
        auto route = text("route");
        bool own_space = true;
        for (const auto& r : cfg.routes)
            if (r.path_prefix == route)
                own_space = r.idempotency.key_space == config::key_space_mode::route;
        if (own_space)
            out.scope.emplace_back("route", route);
    }
    auto resolution = text("resolution");
    if (resolution != "executed" && resolution != "not_executed")
        return "resolution must be \"executed\" or \"not_executed\"";
    out.executed = resolution == "executed";
    if (const auto* s = o.if_contains("status"); out.executed) {
        if (!s || !s->is_int64() || s->get_int64() < 200 || s->get_int64() > 599)
            return "executed needs status: the final status (200-599) the upstream answered";
        out.status = static_cast<unsigned>(s->get_int64());
    } else if (s) {
        return "status is given only with resolution executed";
    }
    out.reason = text("reason");
    if (out.reason.empty() || utf8_characters(out.reason) > max_reason_characters)
        return "reason is required: at most 200 characters saying why";
    return {};
}

std::string resolution_token()
{
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        return {};
    std::string out;
    append_hex(out, bytes, sizeof bytes);
    return out;
}

} // namespace

asio::awaitable<response_type> answer_resolve(gateway_context& ctx, store::session& store,
                                              const admin_request& req, std::string base, std::string client)
{
    const unsigned version = req.version();
    if (req.method() != http::verb::post)
        co_return held_method_only(base, "/admin/v1/records/resolve", "POST", version);
    boost::system::error_code jec;
    auto parsed = json::parse(req.body(), jec);
    if (jec || !parsed.is_object())
        co_return held_bad_request(base, "the body must be a JSON object", version);
    auto live = ctx.live();
    static const config::config no_routes;
    resolve_request ask;
    if (auto problem =
            read_resolve(parsed.get_object(), live ? live->cfg : no_routes, ctx.boot.store.key_secret, ask);
        !problem.empty())
        co_return held_bad_request(base, problem, version);
    const auto named = record_scope(ask.key, ask.scope, ctx.boot.store.key_secret);
    if (!named.problem.empty())
        co_return held_bad_request(base, named.problem, version);
    const store::scope scope = named.scope();
    auto* index = store.held();
    if (!index)
        co_return make_problem(base, {problems::store_unavailable, "the store keeps no index of held keys"},
                               version, true);
    auto lookup = co_await lookup_or_problem(store, scope, base, version);
    if (lookup.problem)
        co_return std::move(*lookup.problem);
    const auto& found = lookup.found;
    const auto& held = *found.existing;
    if (held.state != store::record_state::outcome_unknown)
        co_return make_problem(base,
                               {problems::record_not_held, "the key's record is " +
                                                               std::string(state_name(held.state)) +
                                                               ", not outcome_unknown: nothing to resolve"},
                               version, true);
    // executed: a status-only record under a new owner, so that a probe of the held record can no
    // longer complete or release the key; it lasts what was left of the held record's TTL.
    store::record done;
    done.state = store::record_state::status_only;
    done.fingerprint = held.fingerprint;
    done.owner_token = resolution_token();
    done.created_unix_ms = held.created_unix_ms;
    done.response.status = ask.status;
    if (ask.executed && done.owner_token.empty())
        co_return make_problem(base, {problems::store_unavailable, "no random bytes for a new owner token"},
                               version, true);
    const store::duration ttl{std::max<std::int64_t>(1, found.expires_in_ms)};
    const store::record* replacement = ask.executed ? &done : nullptr;
    auto ec = co_await index->resolve_held(scope, held.owner_token, replacement, ttl);
    if (ec == make_error_code(error::not_owner))
        co_return make_problem(
            base,
            {problems::record_not_held, "the key changed while it was being resolved; look it up again"},
            version, true);
    if (ec)
        co_return make_problem(base, {problems::store_unavailable, "the store failed: " + ec.message()},
                               version, true);
    auto unlisted = co_await index->unlist_held(scope, held_label(scope.tenant));
    (void)unlisted; // an entry left behind is dropped by the next listing that meets it
    const char* resolution = ask.executed ? "executed" : "not_executed";
    ctx.stats.held_resolutions[ask.executed ? 0 : 1].fetch_add(1, std::memory_order_relaxed);
    json::object fields{{"tenant", held_label(scope.tenant)},
                        {"key", scope.key},
                        {"resolution", resolution},
                        {"reason", ask.reason},
                        {"client", client}};
    if (ask.executed)
        fields["status"] = ask.status;
    log::warn(ask.executed ? "admin: held key resolved as executed; a retry gets 422 with its status"
                           : "admin: held key resolved as not executed; released, the next retry runs",
              std::move(fields));
    json::object body{{"resolved", true},
                      {"resolution", resolution},
                      {"record_id", ctx.backend->record_id(scope)},
                      {"state", ask.executed ? "status_only" : "released"}};
    co_return json_answer(body, version);
}

} // namespace idemgate::gateway::detail
