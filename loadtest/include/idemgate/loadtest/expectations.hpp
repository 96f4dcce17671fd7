// SPDX-License-Identifier: Apache-2.0
#pragma once
// Which answers a run expects, and what to tell the user about the ones it does not: a load test
// that measures thousands of refusals per second must say so loudly, not print a rate and PASS.
#include <bitset>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::loadtest {

enum class workload;
struct options;

// Expected status codes, indexed by code (0-599).
using status_set = std::bitset<600>;

// "2xx,201,409": codes (100-599) and classes (1xx-5xx), comma-separated. nullopt with `error`.
std::optional<status_set> parse_status_list(std::string_view text, std::string& error);

// Without --expect-status: every status below 400; a storm also expects the 409s of copies that
// found their key in flight.
status_set default_expected_statuses(workload mode);

// "2xx, 409" for the report: classes where a whole class is expected, else codes.
std::string describe(const status_set& s);

// An answer in one line: status, reason and up to 300 bytes of its body.
std::string describe_answer(const boost::beast::http::response<boost::beast::http::string_body>& res);

// What to change on the command line (or in the gateway) for an unexpected answer, from its
// status and the gateway's problem slug; empty when there is nothing specific to say.
std::string hint_for(unsigned status, std::string_view problem_slug, const options& o);

} // namespace idemgate::loadtest
