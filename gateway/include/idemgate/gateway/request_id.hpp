// SPDX-License-Identifier: Apache-2.0
#pragma once
// Request IDs: one ID per request, kept from the client when it is usable, else made
// here; forwarded upstream, returned on every answer and written to the access log. And the
// trace ID of a W3C `traceparent` (Trace Context, section 3.2), for the access log only.
#include <boost/beast/http/fields.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <string>
#include <string_view>

namespace idemgate::gateway {

// What one request is known by. Both empty when the feature is off (request_id_header: "").
struct request_ids {
    std::string request_id; // the client's (valid) or a generated one
    bool generated = false; // request_id was made here: the request's header must be replaced
    int incoming_lines = 0; // lines the request carried under the header (0: add, not replace)
    std::string trace_id;   // 32 lower-case hex digits of a valid traceparent, else ""
};

// A usable incoming ID: 1 to 200 visible ASCII characters (0x21-0x7E), so no spaces or
// controls: it goes into logs and headers unchanged.
bool valid_request_id(std::string_view id) noexcept;

// 128 random bits as 32 lower-case hex digits, from a per-thread generator seeded once per
// thread (no system call per request). Unique, not secret.
std::string new_request_id();
// The same into `out` (replacing what it held; its storage is reused).
void new_request_id(std::string& out);

// The trace-id of a traceparent `00-<32 hex>-<16 hex>-<2 hex>` (lower-case hex; neither the
// trace-id nor the parent-id all zeros), else "".
std::string_view trace_id_of(std::string_view traceparent) noexcept;

// Reads the request's IDs from its header: the ID under `header_name` when exactly one valid
// line carries it (else a new one, with `generated` set), and the trace ID of exactly one
// valid `traceparent`. An empty `header_name` turns request IDs off (the trace ID is still read).
// Take http::fields or span_fields (span_fields.hpp).
request_ids read_request_ids(const boost::beast::http::fields& fields, std::string_view header_name);
request_ids read_request_ids(const span_fields& fields, std::string_view header_name);
// The same into `ids` (replacing what it held; its strings' storage is reused, so a connection's
// requests one after another do not allocate for their IDs).
void read_request_ids(const boost::beast::http::fields& fields, std::string_view header_name,
                      request_ids& ids);
void read_request_ids(const span_fields& fields, std::string_view header_name, request_ids& ids);

} // namespace idemgate::gateway
