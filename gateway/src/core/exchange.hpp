// SPDX-License-Identifier: Apache-2.0
#pragma once
// The values one request travels in, shared by every room of the request path: the request and
// response types, the filter's answer with what the access log says about it, and what the
// connection knows about the client. Values only: no behaviour, no process or worker state.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <idemgate/gateway/outcome.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <memory>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

namespace http = boost::beast::http;
// Their fields are span_fields (span_fields.hpp).
using fields_type = span_fields;
using request_type = http::request<http::string_body, fields_type>;
using response_type = http::response<http::string_body, fields_type>;

struct tier_entry; // idempotency/local_tier.hpp
struct big_answer; // idempotency/big_answer.hpp

// The answer to one request plus what the access log says about it.
struct handled {
    response_type response;
    outcome result = outcome::pass_through;
    std::string tenant;
    std::string key;
    std::string principal; // credential scopes: the credentials' HMACs (resolved_scope::principal)
    shadow_finding shadow = shadow_finding::none; // shadow-mode routes only
    // A replay from the local tier: written from this copy (its record, or its HTTP/1.1
    // rendering); `response` then carries only the status (for the access log).
    std::shared_ptr<const tier_entry> prerendered;
    bool request_sent = false; // the request was written upstream (set by forward)
    // What the answer tells the client about its key, in the field `status_header` (the route's
    // routes[].idempotency.status_header; "" = not told). The name lives in the request's
    // configuration generation.
    key_status key_state = key_status::none;
    std::string_view status_header;
    // The route's path_prefix (null when no route matched): the trace's http.route. Lives in
    // the request's configuration generation.
    const std::string* route = nullptr;
    std::ptrdiff_t route_index = -1; // index in the generation's routes; -1 = none matched
    // The upstream exchange, for the access log: the address used (or last tried), how long it
    // took (-1: not forwarded), and why it failed ("" when it answered).
    std::string upstream_address;
    std::int64_t upstream_us = -1;
    std::string_view upstream_error;
    bool close_after = false;
    // An upstream answer too large to record (limits.max_record_body): passed on as it arrives,
    // or refused (502) over max_response_body; settle makes its status-only record.
    std::shared_ptr<big_answer> big;
    // The answer was written to the client as it arrived: the connection writes nothing more, and
    // closes when `close_after`. `write_error`: how that ended; `body_bytes`: what was sent.
    bool written = false;
    boost::system::error_code write_error;
    std::uint64_t body_bytes = 0;

    // Back to the state of a new one, keeping the storage of the strings and of the answer's
    // body for the connection's next request (assigning a new one builds and destroys a whole
    // answer). Every member is reset here: one left out would carry its value into the
    // connection's next request, so a member added above is added here too.
    void clear() noexcept
    {
        response.base().clear();
        response.reason(std::string_view{});
        response.result(http::status::ok);
        response.version(11);
        response.body().clear();
        result = outcome::pass_through;
        tenant.clear();
        key.clear();
        principal.clear();
        shadow = shadow_finding::none;
        prerendered.reset();
        request_sent = false;
        key_state = key_status::none;
        status_header = {};
        route = nullptr;
        route_index = -1;
        upstream_address.clear();
        upstream_us = -1;
        upstream_error = {};
        close_after = false;
        big.reset();
        written = false;
        write_error.clear();
        body_bytes = 0;
    }
};

// A request's head as the client sent it (HTTP/1.1), forwarded with the edits spliced in
// (<idemgate/gateway/head_splice.hpp>); empty for HTTP/2 and the requests the gateway makes,
// whose head is rendered from the parsed fields.
struct received_head {
    std::string_view bytes; // the request line through the empty line
    // The request ID the gateway made for a request that came without the field: it is not put
    // into the parsed request but added to the forwarded head ("" when none was made so).
    std::string_view added_request_id;
};

// What the connection knows about the client, for X-Forwarded-* and the access log.
struct client_info {
    // The connection's client: its peer's address, or the source a trusted balancer's PROXY
    // header named. The hop X-Forwarded-For gets; a request's forwarded headers may name the
    // client behind it (request_exchange::client_address).
    std::string ip;
    std::string peer; // the socket's peer address (OpenTelemetry network.peer.address)
    // `ip` is inside listen.trusted_proxies: its X-Forwarded-For or Forwarded is believed.
    bool trusted = false;
    bool tls = false;
    // The common name (UTF-8) of the client certificate verified against tls.client_ca_file:
    // the tenant of routes with tenant_from: client_cert; "" without one.
    std::string client_cert_cn;
};

} // namespace idemgate::gateway::detail
