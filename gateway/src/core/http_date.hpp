// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Date of HTTP answers (RFC 9110 5.6.7, IMF-fixdate: "Sun, 06 Nov 1994 08:49:37 GMT").
#include <cstdint>
#include <string>
#include <string_view>

namespace idemgate::gateway {

// A Unix time in milliseconds, rounded down to the second.
std::string http_date(std::int64_t unix_ms);

// Now, formatted at most once a second per thread: the view stays valid on this thread until
// the next call.
std::string_view http_date_now() noexcept;

} // namespace idemgate::gateway
