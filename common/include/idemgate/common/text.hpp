// SPDX-License-Identifier: Apache-2.0
#pragma once
// Small pieces of text handling shared by the header readers, the configuration and the
// exposition: one spelling each.
#include <string>
#include <string_view>

namespace idemgate {

// Without the optional whitespace around it (RFC 9110 5.6.3: SP and HTAB): a field value, a
// list element, a media-type parameter, an environment variable's value.
inline std::string_view trim_ows(std::string_view s) noexcept
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

// Appends `text` for an HTML document, as text or inside a quoted attribute value: & < > " '
// escaped. The one escaper of the pages the gateway and the load tester write.
inline void append_html_escaped(std::string& out, std::string_view text)
{
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out.push_back(c);
        }
    }
}

} // namespace idemgate
