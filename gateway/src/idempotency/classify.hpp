// SPDX-License-Identifier: Apache-2.0
#pragma once
// The classify phase of the idempotency filter: which route a request takes, whether it is
// guarded, and whether its key, tenant and Connection header are well-formed. No store, no I/O.
#include "core/exchange.hpp"
#include "core/request_exchange.hpp"
#include "idempotency/refusal.hpp"

#include <idemgate/config/config.hpp>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/json_key.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// The first route whose path_prefix `path` starts with: the request's path in normal form
// (<idemgate/common/path_normal_form.hpp>), without the query; "*" (OPTIONS *) is taken as "/".
const config::route_config* match_route(const config::config& cfg, std::string_view path);

// How long the body of a request for `target` may take to arrive: its route's effective
// body_read (resolved at load), or timeouts.body_read when no route takes it. The codecs read a
// body before the filter routes the request, so they match the route for it here; only a body
// that did not come with its head asks.
config::duration body_read_for(const config::config& cfg, std::string_view target);

// What classify learned of a request: its facts (method, key, tenant), the decision's verdict,
// and the storage its views point into (a quoted key with escapes decoded; a lookup's key
// percent-decoded). Not copied or moved once filled: `facts` views `key_storage`.
struct classification {
    request_facts facts;
    request_verdict verdict = request_verdict::pass_through;
    std::string key_storage;
    std::string path_storage;
};

// Is the request guarded, and are its key and tenant well-formed? Returns the refusal (a
// rejection, answered before the store), or nothing with `out.facts` and `out.verdict` filled for
// a guarded or pass-through request.
std::optional<refused> classify_request(const config::route_config& route, const request_type& req,
                                        const client_info& client, classification& out);

// A client lookup (GET <client_lookup_path><key_text>) judged as a guarded request to `route`
// carrying that key would be: the key percent-decoded (into `out.path_storage`) and read like the
// key field, its format, the tenant; the request and client from `ex`. Returns the refusal, or
// nothing with `out.facts` filled.
std::optional<refused> classify_lookup(const config::route_config& route, const request_exchange& ex,
                                       std::string_view key_text, classification& out);

// The refusal of a request the decision rejected (`verdict`), worded from the route's policy; nothing
// for guard and pass_through. `body_key`: what the JSON body gave, for a body key's absence.
std::optional<refused> refusal_for(const config::idempotency_config& policy, const request_facts& facts,
                                   request_verdict verdict, const json_key& body_key);

// For an answer the connection gives before the filter runs (bad framing, a body over the
// limit): the route's status_header when the request carried the route's key, else "".
std::string_view status_header_for(const config::config& cfg, const request_type& req);

// The body a request's fingerprint reads: as sent, or, under fingerprint.decode: gzip with
// Content-Encoding naming gzip alone, decoded into `decoded` (a body that is not one whole gzip
// member stays as sent). Nothing when it decodes past `limit` (413).
std::optional<std::string_view> fingerprint_body(const request_type& req,
                                                 const config::fingerprint_config& fp, std::size_t limit,
                                                 std::string& decoded);

// The route whose client_lookup_path the target's path starts with, and in `key_text` the rest of
// the path (the key, still percent-encoded); null when none.
const config::route_config* lookup_route(const config::config& cfg, std::string_view target,
                                         std::string_view& key_text);

} // namespace idemgate::gateway::detail
