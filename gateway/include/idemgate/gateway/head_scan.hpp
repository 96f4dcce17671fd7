// SPDX-License-Identifier: Apache-2.0
#pragma once
// One pass over the bytes of an HTTP head as received (request or answer), for the two things
// the gateway checks before Beast parses it: where the head ends and whether a line is folded.
#include <cstddef>
#include <string_view>

namespace idemgate::gateway {

struct head_scan {
    // One past the head's empty line (the first "\r\n\r\n"), or 0 when `bytes` holds none.
    std::size_t end = 0;
    // A line begins with SP or HT (obs-fold, RFC 9112 5.2) before that empty line (anywhere in
    // `bytes` when there is none): a '\n' followed by SP or HT. The end is found either way.
    bool folded = false;
};

// From line end to line end (memchr), reading the bytes around each: both answers in one pass.
head_scan scan_head(std::string_view bytes) noexcept;

} // namespace idemgate::gateway
