// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency key as clients send it, and the route's key format. Pure functions, no I/O.
//
// A field value that starts with '"' is an RFC 8941 String: '"', characters 0x20-0x7E in which
// '"' and '\' are escaped by a '\', '"'; then optionally RFC 8941 parameters (";a=1;b"), which
// are checked and ignored; then nothing but spaces. Any other value is the legacy bare key,
// taken whole (so "order;1" stays a key with a ';'). The key is what the String decodes to, or
// the bare value: `"k1"` and `k1` are one key.
#include <idemgate/config/config.hpp>
#include <string>
#include <string_view>

namespace idemgate::gateway {

enum class key_syntax {
    ok,
    empty_string,       // ""
    unterminated,       // no closing '"'
    bad_escape,         // '\' followed by neither '"' nor '\'
    bad_string_char,    // a control or non-ASCII byte inside the quotes
    bad_parameters,     // after the String, a ';' that does not start a valid parameter
    trailing_characters // after the String and its parameters, something else
};

struct key_field {
    std::string_view key; // the key: a view into the field, or into `storage` (escapes decoded)
    key_syntax error = key_syntax::ok;
    std::size_t offset = 0; // on error: where in the field the problem is (0-based)
    bool quoted = false;    // the field was a String
};

// Reads one key field value. `storage` receives the decoded key only when the String has
// escapes; the result's key may point into it.
key_field parse_key_field(std::string_view field, std::string& storage);

// What is wrong, for a problem's detail: e.g. `Idempotency-Key: the quoted string has no closing
// '"'`; "" for key_syntax::ok. `offset` as in key_field.
std::string describe(key_syntax error, std::size_t offset, std::string_view header);

enum class key_format_check {
    ok,
    too_short,     // fewer than min_length characters
    too_long,      // more than max_length characters
    bad_character, // outside 0x21-0x7E (0x20-0x7E with a regular expression)
    no_match       // not a UUID, or not matching the pattern
};

// The decoded key against the route's key_format.
key_format_check check_key_format(const config::key_format_config& format, std::string_view key) noexcept;

// The format in words, for a problem's detail and the documentation: "1 to 255 characters
// 0x21-0x7E", "a UUID (8-4-4-4-12 hexadecimal digits)", "16 to 64 characters matching
// ^[a-z0-9-]+$".
std::string describe(const config::key_format_config& format);

// 8-4-4-4-12 hexadecimal digits (either case) separated by '-'.
bool is_uuid(std::string_view key) noexcept;

} // namespace idemgate::gateway
