// SPDX-License-Identifier: Apache-2.0
#include "admin/record_lookup.hpp"

#include "core/problem.hpp"

#include <idemgate/gateway/key_syntax.hpp>
#include <idemgate/gateway/scope.hpp>

namespace idemgate::gateway::detail {

named_record record_scope(std::string_view key, const scope_parameters& parameters,
                          const std::string& key_secret)
{
    named_record out;
    std::string decoded;
    auto parsed = parse_key_field(key, decoded);
    if (parsed.error != key_syntax::ok) {
        out.problem = describe(parsed.error, parsed.offset, "key");
        return out;
    }
    scope_source source; // views into `parameters`, which outlive it
    for (const auto& [name, value] : parameters)
        set_scope_parameter(source, name, value);
    out.tenant = resolve_scope(source, key_secret).tenant;
    out.key = parsed.key;
    return out;
}

boost::asio::awaitable<record_lookup> lookup_or_problem(store::session& store, store::scope scope,
                                                        std::string base, unsigned version)
{
    record_lookup out;
    out.found = co_await store.lookup(std::move(scope));
    if (out.found.ec)
        out.problem =
            make_problem(base, {problems::store_unavailable, "the store failed: " + out.found.ec.message()},
                         version, true);
    else if (!out.found.existing)
        out.problem = make_problem(base, {problems::record_not_found, "no record for this scope and key"},
                                   version, true);
    co_return out;
}

} // namespace idemgate::gateway::detail
