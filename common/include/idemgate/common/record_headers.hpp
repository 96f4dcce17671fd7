// SPDX-License-Identifier: Apache-2.0
#pragma once
// The response header fields a recorded answer leaves out: hop-by-hop fields (RFC 9110 7.6.1 and
// the proxy-* ones), the framing the gateway sets again, cookies (one client's session must not
// be replayed to another retry), the replay marker and the default name of the key's status
// (a replay says it is one). The gateway applies it when it records
// an answer; the load tester leaves the same fields out when it compares a replay with the
// first answer. One list for both, so the two cannot drift apart.
#include <string_view>

namespace idemgate {

inline constexpr std::string_view record_excluded_headers[] = {"connection",
                                                               "keep-alive",
                                                               "proxy-connection",
                                                               "proxy-authenticate",
                                                               "proxy-authorization",
                                                               "te",
                                                               "trailer",
                                                               "transfer-encoding",
                                                               "upgrade",
                                                               "content-length",
                                                               "set-cookie",
                                                               "idempotent-replayed",
                                                               "idempotency-status"};

// Whether a field named `name` (any case) is left out of a recorded answer.
constexpr bool excluded_from_record(std::string_view name) noexcept
{
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (auto excluded : record_excluded_headers) {
        if (excluded.size() != name.size())
            continue;
        bool same = true;
        for (std::size_t i = 0; same && i < name.size(); ++i)
            same = lower(name[i]) == excluded[i];
        if (same)
            return true;
    }
    return false;
}

} // namespace idemgate
