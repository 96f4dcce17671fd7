// SPDX-License-Identifier: Apache-2.0
#pragma once
// Request fingerprint: SHA-256 over `method \n path-with-query \n decoded-body`, lower-case hex,
// or, under a route's fingerprint options, over what those options select. The filter passes the
// target with its path in normal form (<idemgate/common/path_normal_form.hpp>), so that two
// spellings of one path are one request.
#include <boost/beast/http/fields.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway {

std::string fingerprint(std::string_view method, std::string_view target, std::string_view body);

// The fingerprint under `options` (routes[].idempotency.fingerprint): the query string kept or
// dropped, the listed headers' values joined (all their lines, in order; absent differs from
// empty), the body canonicalised as JSON when asked. The options themselves are hashed in, so
// a record made under other options is a mismatch, never a wrong replay. Default options give
// exactly fingerprint(method, target, body), so records made before the options existed match.
// `fields`: the request's, for the listed headers.
// A body that is not valid JSON under json: canonical is hashed as raw bytes: the upstream
// decides what a malformed body means.
// Takes http::fields or span_fields (span_fields.hpp).
// What is hashed of the request itself: its method, target (as routes see it) and body.
struct fingerprint_input {
    std::string_view method;
    std::string_view target;
    std::string_view body;
};
std::string fingerprint(fingerprint_input request, const config::fingerprint_config& options,
                        const boost::beast::http::fields& fields);
std::string fingerprint(fingerprint_input request, const config::fingerprint_config& options,
                        const span_fields& fields);

// Canonical JSON (RFC 8785-like: object keys sorted by their bytes, of a duplicate key the last,
// no insignificant whitespace, strings as Boost.JSON serialises them) after removing every field
// `ignore` points at (JSON Pointers, RFC 6901; a pointer to nothing is ignored). Each number is
// its source text, unchanged: 1, 1.0 and 1e0 are three documents, and digits past 64 bits count.
// nullopt when `body` is not one JSON value.
std::optional<std::string> canonical_json(std::string_view body, const std::vector<std::string>& ignore);

} // namespace idemgate::gateway
