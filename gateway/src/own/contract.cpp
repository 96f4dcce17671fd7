// SPDX-License-Identifier: Apache-2.0
// The published contract: an OpenAPI 3.1 document built from the configuration alone, so
// `idemgate --contract` and GET /.well-known/idempotency give the same text.
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <idemgate/gateway/contract.hpp>
#include <idemgate/gateway/key_syntax.hpp>
#include <idemgate/gateway/problem_pages.hpp>
#include <string>
#include <vector>

namespace idemgate::gateway {

namespace {

namespace json = boost::json;

// An ISO 8601 duration: 30000ms -> "PT30S", 250ms -> "PT0.250S".
std::string iso_duration(config::duration d)
{
    auto ms = d.count();
    std::string out = "PT" + std::to_string(ms / 1000);
    if (auto frac = ms % 1000) {
        auto digits = std::to_string(1000 + frac).substr(1);
        out += "." + digits;
    }
    return out + "S";
}

std::string_view action_name(config::status_action a)
{
    switch (a) {
    case config::status_action::record: return "record";
    case config::status_action::release: return "release";
    case config::status_action::hold: return "hold";
    }
    return "record";
}

// The whole decoded key, as a JSON Schema (ECMAScript) pattern.
std::string key_pattern(const config::key_format_config& f)
{
    if (f.uuid)
        return "^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$";
    if (f.pattern.empty())
        return "^[!-~]+$";
    return "^(?:" + f.pattern + ")$";
}

json::object on_status(const config::status_policy& p)
{
    json::object out;
    for (unsigned c = 1; c <= 5; ++c)
        out[std::to_string(c) + "xx"] = action_name(p.class_action(c));
    for (unsigned s = 100; s < 600; ++s)
        if (p.action_for(s) != p.class_action(s / 100))
            out[std::to_string(s)] = action_name(p.action_for(s));
    return out;
}

json::object header(std::string_view description, json::object schema)
{
    return {{"description", description}, {"schema", std::move(schema)}};
}

// The problem answers of one guarded operation, by status.
json::object problem_responses(const config::config& cfg, const config::idempotency_config& idem)
{
    using namespace problems;
    std::vector<std::pair<unsigned, const problem*>> list{{400, &invalid_key}, {400, &bad_connection_header},
                                                          {409, &in_flight},   {409, &outcome_unknown},
                                                          {409, &released},    {503, &store_unavailable}};
    if (idem.required)
        list.emplace_back(400, &missing_key);
    if (idem.tenant_from == config::tenant_source::client_cert)
        list.emplace_back(403, &missing_client_certificate);
    if (idem.tenant_scoped()) {
        list.emplace_back(400, &invalid_tenant);
        if (idem.tenant_from == config::tenant_source::header)
            list.emplace_back(400, &missing_tenant);
    }
    list.emplace_back(idem.mismatch_status, &mismatch);
    bool limited = false;
    for (const auto& [name, t] : cfg.tenants)
        limited = limited || t.limited();
    if (limited)
        list.emplace_back(429, &tenant_quota);
    if (idem.on_in_flight == config::in_flight_mode::wait)
        list.emplace_back(503, &too_many_waiting);
    if (cfg.store.type() == config::store_type::memory)
        list.emplace_back(503, &store_full);
    // Any answer can be over limits.max_record_body; a record past record_ttl is a tombstone's 422.
    list.emplace_back(422, &answer_not_replayable);
    if (idem.tombstone_ttl.count() > 0)
        list.emplace_back(422, &record_expired);
    json::object out;
    for (unsigned status : {400u, 403u, 409u, 422u, 429u, 503u}) {
        json::array types;
        std::string description;
        for (const auto& [s, p] : list) {
            if (s != status)
                continue;
            types.emplace_back(std::string(cfg.problems.type_base()) + std::string(p->slug));
            description += (description.empty() ? "" : "; ") + std::string(p->title);
        }
        if (types.empty())
            continue;
        json::object schema{{"allOf", json::array{json::object{{"$ref", "#/components/schemas/Problem"}}}},
                            {"properties", json::object{{"type", json::object{{"enum", types}}}}}};
        out[std::to_string(status)] = json::object{
            {"description", "Answered by the idempotency gateway: " + description},
            {"content",
             json::object{{"application/problem+json", json::object{{"schema", std::move(schema)}}}}},
            {"x-problem-types", std::move(types)}};
    }
    return out;
}

json::object policy(const config::route_config& route)
{
    const auto& idem = route.idempotency;
    json::object out{{"path_prefix", route.path_prefix},
                     {"lock_ttl", iso_duration(idem.lock_ttl)},
                     {"record_ttl", iso_duration(idem.record_ttl)},
                     {"tombstone_ttl", iso_duration(idem.tombstone_ttl)},
                     {"on_status", on_status(idem.on_status)},
                     {"on_unknown_outcome",
                      idem.on_unknown_outcome == config::unknown_outcome_mode::hold ? "hold" : "release"},
                     {"on_in_flight", idem.on_in_flight == config::in_flight_mode::wait ? "wait" : "reject"},
                     {"mismatch_status", idem.mismatch_status},
                     {"key_header", idem.key_header},
                     {"key_format", json::object{{"min_length", idem.key_format.min_length},
                                                 {"max_length", idem.key_format.max_length},
                                                 {"pattern", idem.key_format.pattern},
                                                 {"description", describe(idem.key_format)}}},
                     {"key_space", idem.key_space == config::key_space_mode::route ? "route" : "tenant"},
                     {"key_from", idem.key_from == config::key_source::header ? "header"
                                  : idem.key_from == config::key_source::json ? "json"
                                                                              : "header_or_json"},
                     {"mode", idem.mode == config::route_mode::shadow ? "shadow" : "enforce"}};
    if (idem.key_from != config::key_source::header) {
        json::array pointers;
        for (const auto& p : idem.key_json_pointers)
            pointers.emplace_back(p);
        out["key_json_pointers"] = std::move(pointers);
    }
    if (!idem.client_lookup_path.empty())
        out["client_lookup_path"] = idem.client_lookup_path;
    return out;
}

bool is_openapi_method(std::string_view m)
{
    for (std::string_view known : {"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE"})
        if (m == known)
            return true;
    return false;
}

std::string lower(std::string_view text)
{
    std::string out(text);
    for (auto& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

json::object operation(const config::config& cfg, const config::route_config& route)
{
    const auto& idem = route.idempotency;
    json::array parameters;
    if (idem.key_from != config::key_source::json) {
        json::object schema{{"type", "string"},
                            {"minLength", idem.key_format.min_length},
                            {"maxLength", idem.key_format.max_length},
                            {"pattern", key_pattern(idem.key_format)}};
        parameters.emplace_back(json::object{
            {"name", idem.key_header},
            {"in", "header"},
            {"required", idem.required && idem.key_from == config::key_source::header},
            {"description", "The idempotency key (an RFC 8941 String, or the bare key): " +
                                describe(idem.key_format) + ". Reuse it for every retry of one operation."},
            {"schema", std::move(schema)}});
    }
    if (idem.tenant_from == config::tenant_source::header && !idem.tenant_header.empty())
        parameters.emplace_back(json::object{{"name", idem.tenant_header},
                                             {"in", "header"},
                                             {"required", true},
                                             {"description", "The tenant whose key space the key is in."},
                                             {"schema", json::object{{"type", "string"}}}});
    json::object headers{
        {"Idempotent-Replayed", header("true when the answer is a replay of the first answer for this key",
                                       json::object{{"type", "string"}, {"enum", json::array{"true"}}})}};
    if (!idem.status_header.empty())
        headers[idem.status_header] =
            header("What the gateway did with the key",
                   json::object{{"type", "string"},
                                {"enum", json::array{"executed", "replayed", "released", "held", "reconciled",
                                                     "not-replayable", "expired", "in-flight", "mismatch",
                                                     "rejected", "unavailable", "ignored"}}});
    auto responses = problem_responses(cfg, idem);
    responses["default"] =
        json::object{{"description", "The upstream's answer, recorded for replay as on_status says"},
                     {"headers", std::move(headers)}};
    return {{"summary", "Guarded by the idempotency gateway"},
            {"parameters", std::move(parameters)},
            {"responses", std::move(responses)},
            {"x-idempotency", policy(route)}};
}

} // namespace

std::string contract_json(const config::config& cfg)
{
    json::object paths;
    for (const auto& route : cfg.routes) {
        if (!route.idempotency.enabled || paths.contains(route.path_prefix))
            continue; // a later route with the same prefix is never reached
        json::object item{{"description", "Every path that starts with " + route.path_prefix}};
        for (const auto& method : route.idempotency.methods)
            if (is_openapi_method(method))
                item[lower(method)] = operation(cfg, route);
        paths[route.path_prefix] = std::move(item);
    }
    json::object problem_schema{
        {"type", "object"},
        {"properties", json::object{{"type", json::object{{"type", "string"}, {"format", "uri-reference"}}},
                                    {"title", json::object{{"type", "string"}}},
                                    {"status", json::object{{"type", "integer"}}},
                                    {"detail", json::object{{"type", "string"}}},
                                    {"location", json::object{{"type", "string"}}}}},
        {"required", json::array{"type", "title", "status"}}};
    json::object doc{
        {"openapi", "3.1.0"},
        {"info", json::object{{"title", "Idempotency contract"},
                              {"version", IDEMGATE_VERSION},
                              {"description", "The idempotency keys this API takes (idemgate). Problem types "
                                              "link to pages that say what a client should do."}}},
        {"paths", std::move(paths)},
        {"components", json::object{{"schemas", json::object{{"Problem", std::move(problem_schema)}}}}}};
    return json::serialize(doc);
}

} // namespace idemgate::gateway
