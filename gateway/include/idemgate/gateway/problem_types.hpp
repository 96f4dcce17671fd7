// SPDX-License-Identifier: Apache-2.0
#pragma once
// The RFC 9457 problem types of every error the gateway itself produces: values only (the
// documents are built by make_problem in the gateway). Public so that pure tables naming them
// (refusal.hpp) can be tested on their own.
#include <boost/beast/http/status.hpp>
#include <string_view>

namespace idemgate::gateway {

namespace http = boost::beast::http;

// The problem types idemgate answers with; `type` is "<problems.base_uri><slug>", by default
// "/.well-known/idempotency/problems/<slug>" (a page the gateway serves).
struct problem {
    http::status status;
    std::string_view slug;
    std::string_view title;
};

namespace problems {
inline constexpr problem bad_request{http::status::bad_request, "bad-request", "Malformed request"};
inline constexpr problem plain_http_to_tls{http::status::bad_request, "plain-http-to-tls-port",
                                           "A plain HTTP request was sent to the gateway's HTTPS port"};
inline constexpr problem bad_framing{http::status::bad_request, "bad-framing", "Ambiguous request framing"};
inline constexpr problem bad_connection_header{http::status::bad_request, "bad-connection-header",
                                               "Connection names a header the gateway needs"};
inline constexpr problem missing_key{http::status::bad_request, "missing-idempotency-key",
                                     "Idempotency-Key is required"};
inline constexpr problem invalid_key{http::status::bad_request, "invalid-idempotency-key",
                                     "Invalid Idempotency-Key"};
inline constexpr problem missing_tenant{http::status::bad_request, "missing-tenant",
                                        "Tenant header is required"};
inline constexpr problem missing_client_certificate{http::status::forbidden, "client-certificate-required",
                                                    "A verified client certificate is required"};
inline constexpr problem invalid_tenant{http::status::bad_request, "invalid-tenant", "Invalid tenant header"};
inline constexpr problem unauthorized{http::status::unauthorized, "unauthorized", "Admin token required"};
inline constexpr problem record_not_found{http::status::not_found, "record-not-found", "No such record"};
inline constexpr problem record_not_held{http::status::conflict, "record-not-held", "The key is not held"};
inline constexpr problem no_route{http::status::not_found, "no-route", "No route for this path"};
inline constexpr problem method_not_allowed{http::status::method_not_allowed, "method-not-allowed",
                                            "This path does not answer this method"};
inline constexpr problem invalid_configuration{http::status::unprocessable_entity, "invalid-configuration",
                                               "The configuration file has problems"};
inline constexpr problem method_not_supported{http::status::not_implemented, "method-not-supported",
                                              "The gateway does not proxy this method"};
inline constexpr problem invalid_path{http::status::bad_request, "invalid-path", "Invalid request path"};
inline constexpr problem in_flight{http::status::conflict, "request-in-flight",
                                   "A request with this Idempotency-Key is still being processed"};
inline constexpr problem outcome_unknown{http::status::conflict, "outcome-unknown",
                                         "The outcome of the first request with this key is unknown"};
inline constexpr problem released{http::status::conflict, "request-released",
                                  "The first request with this key failed and was released"};
inline constexpr problem tenant_quota{http::status::too_many_requests, "tenant-quota-exceeded",
                                      "The tenant's quota of new idempotency keys is exhausted"};
inline constexpr problem too_many_waiting{http::status::service_unavailable, "too-many-waiting",
                                          "Too many duplicate requests are waiting"};
inline constexpr problem mismatch{http::status::conflict, "idempotency-key-reused",
                                  "Idempotency-Key reused with a different request"};
inline constexpr problem answer_not_replayable{
    http::status::unprocessable_entity, "answer-not-replayable",
    "The first request with this key ran; its answer was not recorded and cannot be replayed"};
inline constexpr problem record_expired{http::status::unprocessable_entity, "record-expired",
                                        "The record of the first request with this key has expired"};
inline constexpr problem body_too_large{http::status::payload_too_large, "body-too-large",
                                        "Request body too large"};
inline constexpr problem header_too_large{http::status::request_header_fields_too_large, "header-too-large",
                                          "Request header fields too large"};
inline constexpr problem request_timeout{http::status::request_timeout, "request-timeout",
                                         "Request not received in time"};
inline constexpr problem bad_gateway{http::status::bad_gateway, "upstream-unavailable",
                                     "The upstream could not be reached or answered invalid HTTP"};
inline constexpr problem gateway_timeout{http::status::gateway_timeout, "upstream-timeout",
                                         "The upstream did not answer in time"};
inline constexpr problem store_unavailable{http::status::service_unavailable, "store-unavailable",
                                           "The idempotency store is unavailable"};
inline constexpr problem store_full{http::status::service_unavailable, "store-full",
                                    "The idempotency store is full"};
inline constexpr problem shutting_down{http::status::service_unavailable, "shutting-down",
                                       "The gateway is shutting down"};
} // namespace problems

} // namespace idemgate::gateway
