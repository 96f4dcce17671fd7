// SPDX-License-Identifier: Apache-2.0
#include "http/body_framing.hpp"

#include <boost/beast/core/string.hpp>
#include <idemgate/gateway/head_scan.hpp>
#include <idemgate/gateway/response_rules.hpp>
#include <idemgate/gateway/span_fields.hpp>

namespace idemgate::gateway {

namespace beast = boost::beast;

std::string_view describe(response_violation v) noexcept
{
    switch (v) {
    case response_violation::none: return "";
    case response_violation::obs_fold_in_framing:
        return "the answer folds a Transfer-Encoding or Content-Length line (obs-fold)";
    case response_violation::transfer_encoding_not_chunked:
        return "the answer's Transfer-Encoding is not exactly \"chunked\"";
    case response_violation::content_length_and_transfer_encoding:
        return "the answer carries both Content-Length and Transfer-Encoding";
    case response_violation::conflicting_content_length:
        return "the answer carries several Content-Length values";
    }
    return "";
}

namespace {

bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

bool is_framing_name(std::string_view name)
{
    return beast::iequals(name, "Transfer-Encoding") || beast::iequals(name, "Content-Length");
}

} // namespace

response_violation check_response_head(std::string_view head) noexcept
{
    // Most heads have no folded line at all: look for one before reading field names.
    if (!scan_head(head).folded)
        return response_violation::none;
    // Line by line after the status line: a line that starts with SP or HT continues the field
    // line before it.
    std::string_view previous_name;
    auto eol = head.find('\n');
    while (eol != std::string_view::npos && eol + 1 < head.size()) {
        auto start = eol + 1;
        eol = head.find('\n', start);
        auto line = head.substr(start, eol == std::string_view::npos ? std::string_view::npos : eol - start);
        if (line.empty() || line == "\r")
            break;
        if (line.front() == ' ' || line.front() == '\t') {
            if (is_framing_name(previous_name))
                return response_violation::obs_fold_in_framing;
            continue;
        }
        previous_name = line.substr(0, line.find(':'));
    }
    return response_violation::none;
}

unsigned arrived_final_status(std::string_view bytes) noexcept
{
    constexpr std::string_view version = "HTTP/1.";
    if (bytes.size() < 13 || !bytes.starts_with(version) || (bytes[7] != '0' && bytes[7] != '1') ||
        bytes[8] != ' ' || !is_digit(bytes[9]) || !is_digit(bytes[10]) || !is_digit(bytes[11]))
        return 0;
    auto line_end = bytes.find('\n', 12);
    if (line_end == std::string_view::npos)
        return 0;
    // After the code: the line end, or a SP and a reason of visible characters, SP and HT.
    auto rest = bytes.substr(12, line_end - 12);
    if (!rest.empty() && rest.back() == '\r')
        rest.remove_suffix(1);
    if (!rest.empty() && rest.front() != ' ')
        return 0;
    for (char c : rest)
        if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f)
            return 0;
    const unsigned status =
        static_cast<unsigned>((bytes[9] - '0') * 100 + (bytes[10] - '0') * 10 + (bytes[11] - '0'));
    return status >= 200 && status <= 599 ? status : 0;
}

bool lacks_reason_separator(std::string_view head) noexcept
{
    // "HTTP/" DIGIT "." DIGIT SP 3DIGIT CRLF
    return head.size() >= reason_separator_at + 2 && head.substr(0, 5) == "HTTP/" && is_digit(head[5]) &&
           head[6] == '.' && is_digit(head[7]) && head[8] == ' ' && is_digit(head[9]) && is_digit(head[10]) &&
           is_digit(head[11]) && head.substr(reason_separator_at, 2) == "\r\n";
}

template<class Fields>
response_violation check_response_framing(const Fields& fields)
{
    detail::body_framing_lines lines;
    for (const auto& f : fields)
        lines.count(f.name(), f.value());
    switch (detail::check_body_framing(lines)) {
    case detail::body_framing_violation::none: return response_violation::none;
    case detail::body_framing_violation::content_length_and_transfer_encoding:
        return response_violation::content_length_and_transfer_encoding;
    case detail::body_framing_violation::transfer_encoding_not_chunked:
        return response_violation::transfer_encoding_not_chunked;
    case detail::body_framing_violation::conflicting_content_length:
        return response_violation::conflicting_content_length;
    }
    return response_violation::none;
}

response_violation check_response_framing(const http::fields& fields)
{
    return check_response_framing<http::fields>(fields);
}

response_violation check_response_framing(const span_fields& fields)
{
    return check_response_framing<span_fields>(fields);
}

} // namespace idemgate::gateway
