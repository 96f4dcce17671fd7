// SPDX-License-Identifier: Apache-2.0
#pragma once
// RFC 9457 problem documents for every error the gateway itself produces; the problem types
// are in <idemgate/gateway/problem_types.hpp>.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <idemgate/gateway/problem_types.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <span>
#include <string_view>
#include <utility>

namespace idemgate::gateway {

// An extension member of a problem document (RFC 9457 3.2), a string: e.g. "location".
using problem_member = std::pair<std::string_view, std::string_view>;

// What a problem document says: its type (status, title, slug), the detail for this occurrence,
// and optionally an instance URI, a status other than the type's (e.g. 422 for a mismatch) and
// extension members.
struct problem_answer {
    const problem& type;
    std::string_view detail;
    std::string_view instance = {};
    unsigned status_override = 0;
    std::span<const problem_member> members = {};
};

// Builds an application/problem+json response whose `type` is `type_base` + the problem's slug
// (problems.type_base() of the live configuration), for a request of HTTP `version`.
http::response<http::string_body, span_fields>
make_problem(std::string_view type_base, const problem_answer& a, unsigned version, bool keep_alive);

} // namespace idemgate::gateway
