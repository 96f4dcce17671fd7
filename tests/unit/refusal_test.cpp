// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/gateway/refusal.hpp>
#include <string_view>

using namespace idemgate::gateway;

namespace {

struct expected_row {
    refusal reason;
    unsigned status;
    std::string_view slug;
    outcome result;
    key_status key;
    retry_hint retry_after;
    bool close;
    bool fixed_detail; // the row carries the detail; otherwise it is worded from the route's headers
    bool status_from_route;
};

} // namespace

TEST_CASE("every refusal of the filter: its problem, status, outcome, key status, Retry-After, connection")
{
    using enum refusal;
    using enum retry_hint;
    constexpr expected_row table[] = {
        {no_route, 404, "no-route", outcome::rejected, key_status::none, none, false, true, false},
        {invalid_path, 400, "invalid-path", outcome::rejected, key_status::none, none, false, false, false},
        {bad_connection_header, 400, "bad-connection-header", outcome::rejected, key_status::rejected, none,
         true, false, false},
        {missing_key, 400, "missing-idempotency-key", outcome::rejected, key_status::none, none, false, false,
         false},
        {invalid_key, 400, "invalid-idempotency-key", outcome::rejected, key_status::rejected, none, false,
         false, false},
        {missing_tenant, 400, "missing-tenant", outcome::rejected, key_status::rejected, none, false, false,
         false},
        {invalid_tenant, 400, "invalid-tenant", outcome::rejected, key_status::rejected, none, false, false,
         false},
        {missing_client_certificate, 403, "client-certificate-required", outcome::rejected,
         key_status::rejected, none, false, true, false},
        {invalid_certificate_tenant, 400, "invalid-tenant", outcome::rejected, key_status::rejected, none,
         false, true, false},
        {in_flight, 409, "request-in-flight", outcome::conflict, key_status::in_flight, one_second, false,
         true, false},
        {released, 409, "request-released", outcome::conflict, key_status::released, one_second, false, true,
         false},
        {outcome_unknown, 409, "outcome-unknown", outcome::conflict, key_status::held, none, false, true,
         false},
        {mismatch, 409, "idempotency-key-reused", outcome::mismatch, key_status::mismatch, none, false, true,
         true},
        {too_many_waiting, 503, "too-many-waiting", outcome::conflict, key_status::in_flight, one_second,
         false, true, false},
        {store_unavailable, 503, "store-unavailable", outcome::store_error, key_status::unavailable,
         one_second, false, true, false},
        {quota_unavailable, 503, "store-unavailable", outcome::store_error, key_status::unavailable,
         one_second, false, true, false},
        {tenant_in_flight_limit, 429, "tenant-quota-exceeded", outcome::throttled, key_status::released,
         quota_wait, false, true, false},
        {tenant_key_rate, 429, "tenant-quota-exceeded", outcome::throttled, key_status::released, quota_wait,
         false, true, false},
        {not_replayable, 422, "answer-not-replayable", outcome::not_replayable, key_status::not_replayable,
         none, false, true, false},
        {record_expired, 422, "record-expired", outcome::expired, key_status::expired, none, false, true,
         false},
        {store_refusing, 503, "store-unavailable", outcome::store_error, key_status::unavailable, one_second,
         false, true, false},
        {store_full, 503, "store-full", outcome::store_error, key_status::unavailable, full_wait, false, true,
         false},
        {decoded_body_too_large, 413, "body-too-large", outcome::rejected, key_status::rejected, none, true,
         true, false},
    };
    static_assert(std::size(table) == refusal_count, "a test row per refusal");
    for (const auto& want : table) {
        CAPTURE(static_cast<int>(want.reason));
        const auto& row = rule_for(want.reason);
        CHECK(row.reason == want.reason);
        CHECK(static_cast<unsigned>(row.type.status) == want.status);
        CHECK(row.type.slug == want.slug);
        CHECK_FALSE(row.type.title.empty());
        CHECK(row.result == want.result);
        CHECK(row.key == want.key);
        CHECK(row.retry_after == want.retry_after);
        CHECK(row.close == want.close);
        CHECK(row.detail.empty() != want.fixed_detail);
        CHECK(row.status_from_route == want.status_from_route);
    }
}

TEST_CASE("the two store-unavailable refusals say which step could not reach the store")
{
    CHECK(rule_for(refusal::store_unavailable).detail.find("key cannot be reserved") !=
          std::string_view::npos);
    CHECK(rule_for(refusal::quota_unavailable).detail.find("tenant quota cannot be checked") !=
          std::string_view::npos);
}
