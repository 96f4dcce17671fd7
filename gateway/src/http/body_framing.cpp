// SPDX-License-Identifier: Apache-2.0
#include "http/body_framing.hpp"

#include <boost/beast/core/string.hpp>

namespace idemgate::gateway::detail {

std::string_view trim_ows(std::string_view s) noexcept
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

body_framing_violation check_body_framing(const body_framing_lines& lines) noexcept
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
