// SPDX-License-Identifier: Apache-2.0
#include "idempotency/classify.hpp"

#include <array>
#include <boost/beast/core/string.hpp>
#include <idemgate/common/path_normal_form.hpp>
#include <idemgate/common/percent_coding.hpp>
#include <idemgate/gateway/content_decoding.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/json_key.hpp>
#include <iterator>

namespace idemgate::gateway::detail {

const config::route_config* match_route(const config::config& cfg, std::string_view path)
{
    // "OPTIONS *" asks about the server as a whole: the route that covers "/" takes it.
    if (path == "*")
        path = "/";
    for (const auto& r : cfg.routes)
        if (path.starts_with(r.path_prefix))
            return &r;
    return nullptr;
}

config::duration body_read_for(const config::config& cfg, std::string_view target)
{
    std::string storage;
    auto normal = normalize_target(target, storage);
    const auto* route = normal.problem == path_problem::none ? match_route(cfg, normal.path) : nullptr;
    return route ? route->effective_timeouts.body_read : cfg.timeouts.body_read;
}

std::string_view status_header_for(const config::config& cfg, const request_type& req)
{
    std::string storage;
    auto normal = normalize_target(req.target(), storage);
    if (normal.problem != path_problem::none)
        return {};
    const auto* route = match_route(cfg, normal.path);
    if (!route || route->idempotency.status_header.empty())
        return {};
    if (find_header(req, route->idempotency.key_header).count == 0)
        return {};
    return route->idempotency.status_header;
}

namespace {

// The request's tenant under the route's policy: the certificate's common name, or the tenant
// header's value and how many lines it has.
void read_tenant(const config::idempotency_config& policy, const request_type& req, const client_info& client,
                 request_facts& facts)
{
    if (policy.tenant_from == config::tenant_source::client_cert) {
        facts.tenant_count = client.client_cert_cn.empty() ? 0 : 1;
        facts.tenant = client.client_cert_cn;
    } else if (!policy.tenant_header.empty()) {
        auto tenant = find_header(req, policy.tenant_header);
        facts.tenant_count = tenant.count;
        facts.tenant = tenant.value;
    }
}

// What a request whose key should have come from its JSON body lacks.
std::string missing_body_key_detail(const config::idempotency_config& policy, const json_key& found,
                                    std::string_view method)
{
    std::string where = policy.key_json_pointers.size() == 1
                            ? "the JSON body's " + policy.key_json_pointers[0]
                            : "the JSON body's fields";
    if (policy.key_json_pointers.size() > 1)
        for (const auto& p : policy.key_json_pointers)
            where += " " + p;
    std::string out = "this route requires a key on " + std::string(method) + " requests: " + where;
    if (policy.key_from == config::key_source::header_or_json)
        out += " (a string or number) or the " + policy.key_header + " header";
    else
        out += " (a string or number)";
    if (found.result == json_key::status::not_json)
        return out + "; the body is not JSON";
    return out + "; " + policy.key_json_pointers[found.missing] +
           " is absent, empty or not a string or number";
}

} // namespace

std::optional<refused> classify_request(const config::route_config& route, const request_type& req,
                                        const client_info& client, classification& out)
{
    request_facts& facts = out.facts;
    std::string& key_storage = out.key_storage;
    const auto& policy = route.idempotency;
    facts.method = req.method_string();
    json_key body_key;
    if (policy.enabled) {
        auto key = find_header(req, policy.key_header);
        bool from_body = policy.key_from == config::key_source::json ||
                         (policy.key_from == config::key_source::header_or_json && key.count == 0);
        if (!from_body) {
            facts.key_count = key.count;
            if (key.count == 1) {
                auto parsed = parse_key_field(key.value, key_storage);
                facts.key = parsed.key;
                facts.key_error = parsed.error;
                facts.key_error_at = parsed.offset;
            }
        } else if (guards_method(policy, facts.method)) {
            // Only a guarded request's body is parsed; it was read within limits.max_request_body.
            body_key = key_from_json(req.body(), policy.key_json_pointers, key_storage);
            facts.key_count = body_key.result == json_key::status::found ? 1 : 0;
            facts.key = key_storage;
        }
        // A Connection header naming the key or tenant header would strip it on the way
        // upstream after the gateway recorded under it (RFC 9110 7.6.1 lets a client name any
        // header there); a hop-by-hop scope is meaningless, so the request is refused.
        std::array<std::string_view, 2> scope_headers{policy.key_header, policy.tenant_header};
        auto named = connection_names(req, scope_headers);
        if (!named.empty())
            return refused{refusal::bad_connection_header, "the Connection header names " +
                                                               std::string(named) +
                                                               ", which the gateway needs end to end"};
        read_tenant(policy, req, client, facts);
    } else if (!policy.status_header.empty()) {
        // Not guarded at all: only whether a key came matters, to tell the client it was ignored.
        facts.key_count = find_header(req, policy.key_header).count;
    }
    out.verdict = classify(policy, facts);
    return refusal_for(policy, facts, out.verdict, body_key);
}

std::optional<refused> classify_lookup(const config::route_config& route, const request_exchange& ex,
                                       std::string_view key_text, classification& out)
{
    const request_type& req = *ex.req;
    const client_info& client = *ex.client;
    request_facts& facts = out.facts;
    std::string& path_storage = out.path_storage;
    std::string& key_storage = out.key_storage;
    const auto& policy = route.idempotency;
    if (!percent_decode(key_text, path_storage))
        return refused{refusal::invalid_key, "the key in the lookup path is not valid percent-encoding"};
    if (path_storage.empty())
        return refused{refusal::invalid_key,
                       "the lookup path needs the key after " + policy.client_lookup_path};
    // Judged as the same key on a guarded request to the route: its syntax, its format, its tenant.
    facts.method = policy.methods.front();
    facts.key_count = 1;
    auto parsed = parse_key_field(path_storage, key_storage);
    facts.key = parsed.key;
    facts.key_error = parsed.error;
    facts.key_error_at = parsed.offset;
    read_tenant(policy, req, client, facts);
    auto verdict = classify(policy, facts);
    if (auto rejection = refusal_for(policy, facts, verdict, json_key{}))
        return rejection;
    if (verdict != request_verdict::guard)
        return refused{refusal::no_route};
    return std::nullopt;
}

std::optional<refused> refusal_for(const config::idempotency_config& policy, const request_facts& facts,
                                   request_verdict verdict, const json_key& body_key)
{
    switch (verdict) {
    case request_verdict::pass_through:
    case request_verdict::guard: return std::nullopt;
    case request_verdict::reject_missing_key:
        if (policy.key_from != config::key_source::header)
            return refused{refusal::missing_key, missing_body_key_detail(policy, body_key, facts.method)};
        return refused{refusal::missing_key, "this route requires the " + policy.key_header + " header on " +
                                                 std::string(facts.method) + " requests"};
    case request_verdict::reject_invalid_key:
        return refused{refusal::invalid_key, invalid_key_detail(policy, facts)};
    case request_verdict::reject_missing_tenant:
        if (policy.tenant_from == config::tenant_source::client_cert)
            return refused{refusal::missing_client_certificate};
        return refused{refusal::missing_tenant,
                       "a request with " + policy.key_header + " must carry " + policy.tenant_header};
    case request_verdict::reject_invalid_tenant:
        if (policy.tenant_from == config::tenant_source::client_cert)
            return refused{refusal::invalid_certificate_tenant};
        return refused{refusal::invalid_tenant,
                       policy.tenant_header + " must appear once, with 1 to 255 visible ASCII characters"};
    }
    return std::nullopt;
}

namespace {

// Content-Encoding names exactly one coding, gzip (or its old alias x-gzip), on one line.
bool gzip_coded(const request_type& req)
{
    auto range = req.equal_range(http::field::content_encoding);
    if (range.first == range.second || std::next(range.first) != range.second)
        return false;
    auto value = range.first->value();
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
        value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t'))
        value.remove_suffix(1);
    return boost::beast::iequals(value, "gzip") || boost::beast::iequals(value, "x-gzip");
}

} // namespace

std::optional<std::string_view> fingerprint_body(const request_type& req,
                                                 const config::fingerprint_config& fp, std::size_t limit,
                                                 std::string& decoded)
{
    std::string_view body = req.body();
    if (fp.decode != config::body_decoding::gzip || !gzip_coded(req))
        return body;
    switch (gunzip(body, limit, decoded)) {
    case decode_result::decoded: return std::string_view(decoded);
    case decode_result::too_large: return std::nullopt;
    case decode_result::invalid: break; // not gzip after all: fingerprinted as sent
    }
    return body;
}

const config::route_config* lookup_route(const config::config& cfg, std::string_view target,
                                         std::string_view& key_text)
{
    std::string_view path; // the target without its query, found for the first lookup path
    for (const auto& r : cfg.routes) {
        const auto& prefix = r.idempotency.client_lookup_path;
        if (prefix.empty())
            continue;
        if (path.data() == nullptr)
            path = target.substr(0, target.find('?'));
        if (path.starts_with(prefix)) {
            key_text = path.substr(prefix.size());
            return &r;
        }
    }
    return nullptr;
}

} // namespace idemgate::gateway::detail
