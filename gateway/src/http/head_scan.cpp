// SPDX-License-Identifier: Apache-2.0
#include <cstring>
#include <idemgate/gateway/head_scan.hpp>

namespace idemgate::gateway {

head_scan scan_head(std::string_view bytes) noexcept
{
    head_scan out;
    const char* data = bytes.data();
    const std::size_t n = bytes.size();
    for (std::size_t at = 0; at + 1 < n; ++at) {
        const void* lf = std::memchr(data + at, '\n', n - 1 - at);
        if (lf == nullptr)
            break;
        at = static_cast<std::size_t>(static_cast<const char*>(lf) - data);
        const char next = data[at + 1];
        if (next == ' ' || next == '\t')
            out.folded = true;
        if (next == '\r' && at + 2 < n && data[at + 2] == '\n' && at > 0 && data[at - 1] == '\r') {
            out.end = at + 3;
            break;
        }
    }
    return out;
}

} // namespace idemgate::gateway
