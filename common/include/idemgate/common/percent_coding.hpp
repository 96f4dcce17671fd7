// SPDX-License-Identifier: Apache-2.0
#pragma once
// Percent-decoding (RFC 3986 2.1) by Boost.URL, for what the gateway decodes whole: a client
// lookup path's key and the admin API's query parameters. Every '%' must start an escape of two
// hexadecimal digits (either case); every other byte is taken as it is, and an escape may stand
// for any octet (NUL, '/', above 0x7F): what the decoded text may hold is the caller's rule (a
// key's syntax refuses what a key cannot be). The path normal form (path_normal_form.hpp)
// decodes only some escapes and has its own rules.
#include <string>
#include <string_view>

namespace idemgate {

// `in` decoded into `out` (replacing it); '+' is itself. False, `out` unspecified, when a '%'
// is not followed by two hexadecimal digits.
bool percent_decode(std::string_view in, std::string& out);

// As percent_decode for application/x-www-form-urlencoded names and values: '+' is a space.
bool form_decode(std::string_view in, std::string& out);

} // namespace idemgate
