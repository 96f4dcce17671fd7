// SPDX-License-Identifier: Apache-2.0
#pragma once
// The framing rules a request and an answer share (RFC 9112 6.1 and 6.3): the Content-Length
// and Transfer-Encoding lines of a parsed head, counted once, and what makes a body impossible to
// delimit exactly. http_rules (requests) and response_rules (answers) name the violation in
// their own words and add their own rules around it.
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <idemgate/common/text.hpp>
#include <string_view>

namespace idemgate::gateway::detail {

enum class body_framing_violation {
    none,
    content_length_and_transfer_encoding, // both: a smuggling shape
    transfer_encoding_not_chunked,        // anything but exactly "chunked" (one line)
    conflicting_content_length,           // several Content-Length lines or a list
};

// A head's framing lines, fed one field at a time.
struct body_framing_lines {
    int content_length_lines = 0;
    int transfer_encoding_lines = 0;
    std::string_view content_length;
    std::string_view transfer_encoding;

    // Counts `name` if it is Content-Length or Transfer-Encoding; true if it was one of them.
    bool count(boost::beast::http::field name, std::string_view value) noexcept
    {
        if (name == boost::beast::http::field::content_length) {
            ++content_length_lines;
            content_length = value;
            return true;
        }
        if (name == boost::beast::http::field::transfer_encoding) {
            ++transfer_encoding_lines;
            transfer_encoding = value;
            return true;
        }
        return false;
    }
};

// In this order: both lines, a Transfer-Encoding other than one "chunked", several lengths.
// Inline: every request's framing check runs it.
inline body_framing_violation check_body_framing(const body_framing_lines& lines) noexcept
{
    if (lines.content_length_lines > 0 && lines.transfer_encoding_lines > 0)
        return body_framing_violation::content_length_and_transfer_encoding;
    if (lines.transfer_encoding_lines > 1 ||
        (lines.transfer_encoding_lines == 1 &&
         !boost::beast::iequals(trim_ows(lines.transfer_encoding), "chunked")))
        return body_framing_violation::transfer_encoding_not_chunked;
    if (lines.content_length_lines > 1 || lines.content_length.find(',') != std::string_view::npos)
        return body_framing_violation::conflicting_content_length;
    return body_framing_violation::none;
}

} // namespace idemgate::gateway::detail
