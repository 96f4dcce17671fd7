// SPDX-License-Identifier: Apache-2.0
#pragma once
// HTTP/1.1 rules the gateway enforces on an upstream's answer before it reads the body: an
// answer it cannot delimit exactly, or whose framing fields a strict parser would read otherwise,
// is refused with 502 (RFC 9112 5.2 and 6.3 allow it; nginx and HAProxy do the same). Beast 1.81
// reads a body whose final transfer coding is not chunked until the connection closes, and
// unfolds obs-fold into the value.
#include <boost/beast/http/fields.hpp>
#include <cstddef>
#include <idemgate/gateway/span_fields.hpp>
#include <string_view>

namespace idemgate::gateway {

namespace http = boost::beast::http;

enum class response_violation {
    none,
    obs_fold_in_framing,                  // Transfer-Encoding or Content-Length continued on a folded line
    transfer_encoding_not_chunked,        // anything but exactly "chunked" (one line)
    content_length_and_transfer_encoding, // RFC 9112 6.1
    conflicting_content_length,           // several Content-Length lines or a list
};

std::string_view describe(response_violation v) noexcept;

// Checks the head as received (the status line through the empty line).
response_violation check_response_head(std::string_view head) noexcept;

// True for a status line without the SP that precedes an (empty) reason phrase,
// "HTTP/1.1 301\r\n": RFC 9112 4 asks for the SP, but curl, nginx and HAProxy read the line
// without it; the gateway inserts it (at `reason_separator_at`) before Beast parses the line.
bool lacks_reason_separator(std::string_view head) noexcept;
inline constexpr std::size_t reason_separator_at = 12; // after "HTTP/1.1 301"

// The status of a final answer whose status line has arrived whole: `bytes` begin with
// "HTTP/1.x NNN", then a SP and a reason or nothing, up to a line end (CRLF or a bare LF), and
// NNN is 200-599. 0 otherwise (not there yet, an interim 1xx, or not a status line). An answer
// that began is an outcome of the upstream, even when the rest of it cannot be read.
unsigned arrived_final_status(std::string_view bytes) noexcept;

// Checks the parsed fields of a final answer whose body is read (not 1xx, 204, 304 or a HEAD
// answer).
// Takes http::fields or span_fields (span_fields.hpp).
response_violation check_response_framing(const http::fields& fields);
response_violation check_response_framing(const span_fields& fields);

} // namespace idemgate::gateway
