#include "idempotency/refusal.hpp"

#include "core/problem.hpp"

#include <array>
#include <idemgate/gateway/refusal.hpp>

namespace idemgate::gateway {

namespace {

using enum refusal;
using enum retry_hint;

// One row per refusal, in the enum's order.
constexpr std::array<refusal_rule, refusal_count> rules{{
    {no_route, problems::no_route, outcome::rejected, key_status::none, none, false,
     "no route matches this path", false},
    {bad_connection_header,
     problems::bad_connection_header,
     outcome::rejected,
     key_status::rejected,
     none,
     true,
     {},
     false},
    {missing_key, problems::missing_key, outcome::rejected, key_status::none, none, false, {}, false},
    {invalid_key, problems::invalid_key, outcome::rejected, key_status::rejected, none, false, {}, false},
    {missing_tenant,
     problems::missing_tenant,
     outcome::rejected,
     key_status::rejected,
     none,
     false,
     {},
     false},
    {invalid_tenant,
     problems::invalid_tenant,
     outcome::rejected,
     key_status::rejected,
     none,
     false,
     {},
     false},
    {missing_client_certificate, problems::missing_client_certificate, outcome::rejected,
     key_status::rejected, none, false,
     "this route takes the tenant from the client certificate; the connection presented no verified "
     "certificate with a common name",
     false},
    {invalid_certificate_tenant, problems::invalid_tenant, outcome::rejected, key_status::rejected, none,
     false, "the client certificate's common name must have 1 to 255 bytes and no control characters", false},
    {in_flight, problems::in_flight, outcome::conflict, key_status::in_flight, one_second, false,
     "the first request with this key has not finished; retry later", false},
    {released, problems::released, outcome::conflict, key_status::released, one_second, false,
     "the first request with this key failed and was released while this one waited; retry to run it", false},
    {outcome_unknown, problems::outcome_unknown, outcome::conflict, key_status::held, none, false,
     "the first request with this key was sent upstream and no answer came, so it may have run; it is "
     "not sent again. The key is held until record_ttl; an operator who has checked the upstream can "
     "release it by deleting its record in the store",
     false},
    {mismatch, problems::mismatch, outcome::mismatch, key_status::mismatch, none, false,
     "this key was first used with another method, path or body", true},
    {too_many_waiting, problems::too_many_waiting, outcome::conflict, key_status::in_flight, one_second,
     false, "limits.max_waiting duplicates are waiting already; retry later", false},
    {store_unavailable, problems::store_unavailable, outcome::store_error, key_status::unavailable,
     one_second, false, "the request was not forwarded because its key cannot be reserved", false},
    {quota_unavailable, problems::store_unavailable, outcome::store_error, key_status::unavailable,
     one_second, false, "the request was not forwarded because its tenant quota cannot be checked", false},
    {tenant_in_flight_limit, problems::tenant_quota, outcome::throttled, key_status::released, quota_wait,
     false, "the tenant has max_in_flight requests in flight already", false},
    {tenant_key_rate, problems::tenant_quota, outcome::throttled, key_status::released, quota_wait, false,
     "the tenant's new_keys_per_second is exhausted", false},
}};

constexpr bool rows_in_order()
{
    for (std::size_t i = 0; i < rules.size(); ++i)
        if (static_cast<std::size_t>(rules[i].reason) != i)
            return false;
    return true;
}
static_assert(rows_in_order(), "one row per refusal, in the enum's order");

} // namespace

const refusal_rule& rule_for(refusal r) noexcept
{
    return rules[static_cast<std::size_t>(r)];
}

} // namespace idemgate::gateway

namespace idemgate::gateway::detail {

namespace {

// A Location value that can stand between '<' and '>' in a Link (RFC 8288): a URI reference has
// no spaces, controls, quotes or angle brackets.
bool fits_link(std::string_view uri) noexcept
{
    for (char ch : uri) {
        auto c = static_cast<unsigned char>(ch);
        if (c <= 0x20 || c >= 0x7f || c == '<' || c == '>' || c == '"')
            return false;
    }
    return !uri.empty();
}

} // namespace

void render_refusal(handled& h, const refused& r, std::string_view type_base, unsigned version,
                    unsigned route_status)
{
    const auto& row = rule_for(r.reason);
    std::string_view detail = r.detail.empty() ? row.detail : std::string_view(r.detail);
    std::array<problem_member, 1> location{{{"location", r.location}}};
    h.response = make_problem(type_base, row.type, detail, version, !row.close, {},
                              row.status_from_route ? route_status : 0,
                              std::span<const problem_member>(location.data(), r.location.empty() ? 0 : 1));
    if (fits_link(r.location))
        h.response.set(http::field::link, "<" + r.location + ">; rel=\"original\"");
    switch (row.retry_after) {
    case retry_hint::none: break;
    case retry_hint::one_second: h.response.set(http::field::retry_after, "1"); break;
    case retry_hint::quota_wait:
        h.response.set(http::field::retry_after, std::to_string(retry_after_seconds(r.retry_after_ms)));
        break;
    }
    h.result = row.result;
    h.key_state = row.key;
    h.close_after = row.close;
}

} // namespace idemgate::gateway::detail
