// SPDX-License-Identifier: Apache-2.0
#pragma once
// A key taken from a JSON request body (routes[].idempotency.key_from: json or header_or_json).
// A pure function, no I/O.
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway {

struct json_key {
    enum class status {
        found,    // `key` holds the key
        not_json, // the body is not a JSON document
        missing   // the pointer `missing` names has no number or non-empty string
    } result = status::not_json;
    std::size_t missing = 0; // with status::missing: the index of the first such pointer
};

// The key at `pointers` (RFC 6901) in `body`, written to `key`: the string's characters, or the
// number's source text (an integer's digits however many, so -5 is "-5" and -0 is "0"; a fraction
// or exponent as written, so 1.5e3 is "1.5e3"). With several pointers each value is
// percent-encoded ('%' as %25, ',' as %2C) and the values are joined by ',', so two different
// lists of values never make one key.
json_key key_from_json(std::string_view body, const std::vector<std::string>& pointers, std::string& key);

} // namespace idemgate::gateway
