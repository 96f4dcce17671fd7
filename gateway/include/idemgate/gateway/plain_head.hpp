// SPDX-License-Identifier: Apache-2.0
#pragma once
// A head in its common shape, read without Beast's parser: an upstream's answer with a final
// status and a body delimited by one Content-Length, a client's request with an origin-form
// target and at most one Content-Length; in both, no transfer coding, no upgrade, no folded line.
// Most requests and answers of an API have that shape, and reading it here costs about a third of
// what Beast's parser spends on it (docs/performance.md). Any other head, and any byte these
// readers are not sure of, is left to Beast's parser, which reads or refuses it as before: what is
// read here is exactly what Beast's parser would make of the same bytes (the unit tests and the
// request fuzzer compare the two on every input).
#include <boost/beast/http/message.hpp>
#include <cstddef>
#include <cstdint>
#include <idemgate/gateway/head_facts.hpp>
#include <string_view>

namespace idemgate::gateway {

namespace http = boost::beast::http;

// Both readers fill the head's facts (head_facts.hpp) as facts_of would from Beast's parser.
using plain_answer = head_facts;  // content_length always set: the body's length, as announced
using plain_request = head_facts; // content_length none: the request has no body

// What a plain reader takes: a head shorter than `header_bytes`, a body of at most `body` bytes.
struct head_limits {
    std::size_t header_bytes = 0;
    std::uint64_t body = 0;
};

// Reads `head` (an answer's head as received: the status line through the empty line, nothing
// after it) into `res`, which must be new (no fields, no reason). False, `res` untouched, when the
// head is not of the shape above, is `limits.header_bytes` bytes or more, or announces a body over
// `limits.body` bytes: Beast's parser reads it then.
// Shape: HTTP/1.0 or HTTP/1.1, a status 200-599 but 204 and 304 (so the body is read), fields
// whose names are tokens and whose values hold no control byte but HT, exactly one
// Content-Length of decimal digits, Connection (or Proxy-Connection) only "close" or
// "keep-alive", no Transfer-Encoding or Upgrade, no folded line, at most 64 fields.
// Defined for http::fields and span_fields (span_fields.hpp).
template<class Fields>
bool read_plain_answer(std::string_view head, head_limits limits, http::response_header<Fields>& res,
                       plain_answer& out);

// Reads a request's `head` (the request line through the empty line, nothing after it; no empty
// lines before it) into `req`, which must be new. False, `req` untouched, when the head is not of
// the common shape, is `limits.header_bytes` bytes or more, or announces a body over `limits.body` bytes.
// Shape: a method Beast knows (case-sensitive), an origin-form target of visible ASCII, HTTP/1.0 or
// HTTP/1.1, fields as for an answer (above), at most one Content-Length (none: no body).
template<class Fields>
bool read_plain_request(std::string_view head, head_limits limits, http::request_header<Fields>& req,
                        plain_request& out);

// Beast's string_to_field for a field name (token bytes), the names most heads carry compared
// first, a word at a time.
http::field field_of_name(std::string_view name) noexcept;

} // namespace idemgate::gateway
