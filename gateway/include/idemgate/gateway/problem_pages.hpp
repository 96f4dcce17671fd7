// SPDX-License-Identifier: Apache-2.0
#pragma once
// The documentation of the gateway's problem types (RFC 9457 3.1.1): every type the gateway
// answers with, what it means and what a client should do, served as a short HTML page at
// <default_problem_base><type>. Public so that the table can be tested on its own.
#include <idemgate/gateway/problem_types.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace idemgate::gateway {

// A problem type and its advice to the client that received it.
struct problem_doc {
    const problem* type;
    std::string_view advice;
};

// Every problem type the gateway answers with, once each.
std::span<const problem_doc> problem_docs() noexcept;

// The entry for a type's slug, or null.
const problem_doc* find_problem_doc(std::string_view slug) noexcept;

// The HTML page of a type's slug, or nothing for a slug the gateway does not answer with.
std::optional<std::string> problem_page(std::string_view slug);

} // namespace idemgate::gateway
