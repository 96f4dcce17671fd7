// SPDX-License-Identifier: Apache-2.0
#include "idempotency/refusal.hpp"

#include "core/problem.hpp"

#include <array>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <ctime>
#include <idemgate/gateway/refusal.hpp>

namespace idemgate::gateway {

namespace {

using enum refusal;
using enum retry_hint;

// One row per refusal, in the enum's order.
constexpr std::array<refusal_rule, refusal_count> rules{{
    {no_route, problems::no_route, outcome::rejected, key_status::none, none, false,
     "no route matches this path", false},
    {invalid_path, problems::invalid_path, outcome::rejected, key_status::none, none, false, {}, false},
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
    {not_replayable, problems::answer_not_replayable, outcome::not_replayable, key_status::not_replayable,
     none, false,
     "the first request with this key ran and its answer is not recorded (passed on as it arrived, too "
     "large to record under limits.max_record_body, or confirmed by an operator); it is not run again",
     false},
    {record_expired, problems::record_expired, outcome::expired, key_status::expired, none, false,
     "the first request with this key ran; its answer is no longer kept (record_ttl), and it is not run "
     "again while the key's tombstone lasts (tombstone_ttl)",
     false},
    {store_refusing, problems::store_unavailable, outcome::store_error, key_status::unavailable, one_second,
     false,
     "the request was not forwarded because the store refuses writes: its answer could not be recorded",
     false},
    {store_full, problems::store_full, outcome::store_error, key_status::unavailable, full_wait, false,
     "the request was not forwarded because the store has no room for its key until older records expire",
     false},
    {decoded_body_too_large, problems::body_too_large, outcome::rejected, key_status::rejected, none, true,
     "the body, decoded from Content-Encoding: gzip for its fingerprint, is over limits.max_request_body",
     false},
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

// Adds a number member to a serialized problem document (its members are strings).
void add_number_member(std::string& document, std::string_view name, unsigned value)
{
    auto body = boost::json::parse(document).as_object();
    body[name] = value;
    document = boost::json::serialize(body);
}

} // namespace

std::string rfc3339_utc(std::int64_t unix_ms)
{
    auto seconds = static_cast<std::time_t>(unix_ms / 1000);
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char text[64];
    std::snprintf(text, sizeof text, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(unix_ms % 1000));
    return text;
}

void render_refusal(handled& h, const refused& r, refusal_frame frame)
{
    const auto type_base = frame.type_base;
    const auto version = frame.version;
    const auto route_status = frame.route_status;
    const auto& row = rule_for(r.reason);
    std::string_view detail = r.detail.empty() ? row.detail : std::string_view(r.detail);
    std::array<problem_member, 2> members;
    std::size_t count = 0;
    if (!r.location.empty())
        members[count++] = {"location", r.location};
    if (!r.original_time.empty())
        members[count++] = {"original_time", r.original_time};
    h.response = make_problem(type_base,
                              {row.type,
                               detail,
                               {},
                               row.status_from_route ? route_status : 0,
                               std::span<const problem_member>(members.data(), count)},
                              version, !row.close);
    if (r.original_status != 0) {
        add_number_member(h.response.body(), "original_status", r.original_status);
        h.response.prepare_payload();
    }
    if (fits_link(r.location))
        h.response.set(http::field::link, "<" + r.location + ">; rel=\"original\"");
    switch (row.retry_after) {
    case retry_hint::none: break;
    case retry_hint::one_second: h.response.set(http::field::retry_after, "1"); break;
    case retry_hint::quota_wait:
    case retry_hint::full_wait:
        h.response.set(http::field::retry_after, std::to_string(retry_after_seconds(r.retry_after_ms)));
        break;
    }
    h.result = row.result;
    h.key_state = row.key;
    h.close_after = row.close;
}

} // namespace idemgate::gateway::detail
