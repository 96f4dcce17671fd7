#include <doctest/doctest.h>
#include <idemgate/common/error.hpp>
#include <idemgate/gateway/decision.hpp>
#include <string>

using namespace idemgate;
using namespace idemgate::gateway;

namespace {

config::idempotency_config guarded_policy()
{
    config::idempotency_config p;
    p.enabled = true;
    p.methods = {"POST", "PATCH"};
    p.key_header = "Idempotency-Key";
    return p;
}

store::record rec(store::record_state state, std::string fp)
{
    store::record r;
    r.state = state;
    r.fingerprint = std::move(fp);
    r.owner_token.assign(1, 't'); // not = "t": GCC 12 warns (-Wrestrict, a false positive)
    return r;
}

} // namespace

TEST_CASE("keys are 1 to 255 visible ASCII characters")
{
    CHECK(is_valid_key("a"));
    CHECK(is_valid_key(std::string(255, 'k')));
    CHECK(is_valid_key("order-42_!~"));
    CHECK_FALSE(is_valid_key(""));
    CHECK_FALSE(is_valid_key(std::string(256, 'k')));
    CHECK_FALSE(is_valid_key("with space"));
    CHECK_FALSE(is_valid_key("tab\there"));
    CHECK_FALSE(is_valid_key("caf\xc3\xa9"));
    CHECK_FALSE(is_valid_key(std::string("nul\0x", 5)));
}

TEST_CASE("classify: the request table")
{
    struct row {
        const char* name;
        bool enabled;
        bool required;
        const char* tenant_header;
        request_facts facts;
        request_verdict expected;
    };
    const row rows[] = {
        {"route without idempotency",
         false,
         false,
         "",
         {"POST", 1, "k", 0, ""},
         request_verdict::pass_through},
        {"method not listed", true, false, "", {"GET", 1, "k", 0, ""}, request_verdict::pass_through},
        {"method case matters (tokens are case-sensitive)",
         true,
         false,
         "",
         {"post", 1, "k", 0, ""},
         request_verdict::pass_through},
        {"no key, optional", true, false, "", {"POST", 0, "", 0, ""}, request_verdict::pass_through},
        {"no key, required", true, true, "", {"POST", 0, "", 0, ""}, request_verdict::reject_missing_key},
        {"no key, required, unlisted method",
         true,
         true,
         "",
         {"DELETE", 0, "", 0, ""},
         request_verdict::pass_through},
        {"one valid key", true, false, "", {"POST", 1, "k1", 0, ""}, request_verdict::guard},
        {"PATCH with key", true, false, "", {"PATCH", 1, "k1", 0, ""}, request_verdict::guard},
        {"two key lines", true, false, "", {"POST", 2, "k1", 0, ""}, request_verdict::reject_invalid_key},
        {"empty key", true, false, "", {"POST", 1, "", 0, ""}, request_verdict::reject_invalid_key},
        {"key with space", true, false, "", {"POST", 1, "a b", 0, ""}, request_verdict::reject_invalid_key},
        {"tenant configured, missing",
         true,
         false,
         "X-Tenant-ID",
         {"POST", 1, "k", 0, ""},
         request_verdict::reject_missing_tenant},
        {"tenant configured, two lines",
         true,
         false,
         "X-Tenant-ID",
         {"POST", 1, "k", 2, "t"},
         request_verdict::reject_invalid_tenant},
        {"tenant configured, present",
         true,
         false,
         "X-Tenant-ID",
         {"POST", 1, "k", 1, "acme"},
         request_verdict::guard},
        {"tenant configured, keyless request passes",
         true,
         false,
         "X-Tenant-ID",
         {"POST", 0, "", 0, ""},
         request_verdict::pass_through},
        {"invalid key checked before tenant",
         true,
         false,
         "X-Tenant-ID",
         {"POST", 1, "", 0, ""},
         request_verdict::reject_invalid_key},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        auto p = guarded_policy();
        p.enabled = r.enabled;
        p.required = r.required;
        p.tenant_header = r.tenant_header;
        CHECK(classify(p, r.facts) == r.expected);
    }
}

TEST_CASE("classify: a tenant from the client certificate")
{
    auto p = guarded_policy();
    p.tenant_from = config::tenant_source::client_cert;
    struct row {
        const char* name;
        request_facts facts;
        request_verdict expected;
    };
    const row rows[] = {
        {"no certificate", {"POST", 1, "k", 0, ""}, request_verdict::reject_missing_tenant},
        {"common name with spaces", {"POST", 1, "k", 1, "Acme Payments"}, request_verdict::guard},
        {"UTF-8 common name", {"POST", 1, "k", 1, "caf\xc3\xa9"}, request_verdict::guard},
        {"control character", {"POST", 1, "k", 1, "a\nb"}, request_verdict::reject_invalid_tenant},
        {"keyless request passes", {"POST", 0, "", 0, ""}, request_verdict::pass_through},
        {"invalid key first", {"POST", 1, "a b", 1, "acme"}, request_verdict::reject_invalid_key},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        CHECK(classify(p, r.facts) == r.expected);
    }
    CHECK_FALSE(is_valid_certificate_tenant(std::string(256, 'a')));
    CHECK(is_valid_certificate_tenant(std::string(255, 'a')));
    CHECK_FALSE(is_valid_certificate_tenant(std::string("a\x7f", 2)));
    // The store's tenant part: its own namespace, no spaces.
    CHECK(certificate_scope_tenant("acme") == "\x01"
                                              "acme");
    CHECK(certificate_scope_tenant("Acme 100%") == "\x01"
                                                   "Acme%20100%25");
    CHECK(certificate_scope_tenant("a b") != certificate_scope_tenant("a%20b"));
}

TEST_CASE("decide_after_reserve: the store table")
{
    using config::failure_mode;
    const std::string fp = "fp-a";
    struct row {
        const char* name;
        store::reserve_result result;
        failure_mode mode;
        reserve_action expected;
    };
    const row rows[] = {
        {"acquired", {{}, true, std::nullopt}, failure_mode::reject, reserve_action::forward_and_record},
        {"finished, same fingerprint",
         {{}, false, rec(store::record_state::completed, "fp-a")},
         failure_mode::reject,
         reserve_action::replay},
        {"in flight, same fingerprint",
         {{}, false, rec(store::record_state::in_flight, "fp-a")},
         failure_mode::reject,
         reserve_action::in_flight_conflict},
        {"finished, other fingerprint",
         {{}, false, rec(store::record_state::completed, "fp-b")},
         failure_mode::reject,
         reserve_action::fingerprint_mismatch},
        {"in flight, other fingerprint",
         {{}, false, rec(store::record_state::in_flight, "fp-b")},
         failure_mode::reject,
         reserve_action::fingerprint_mismatch},
        {"store down, reject",
         {make_error_code(error::store_unavailable), false, std::nullopt},
         failure_mode::reject,
         reserve_action::reject_store_failure},
        {"store timeout, pass_through",
         {make_error_code(error::store_timeout), false, std::nullopt},
         failure_mode::pass_through,
         reserve_action::pass_through_store_failure},
        {"corrupt record, reject",
         {make_error_code(error::record_corrupt), false, std::nullopt},
         failure_mode::reject,
         reserve_action::reject_store_failure},
        {"not acquired and nothing there is a store fault",
         {{}, false, std::nullopt},
         failure_mode::reject,
         reserve_action::reject_store_failure},
        {"error wins over a stale existing record",
         {make_error_code(error::store_error_reply), false, rec(store::record_state::completed, "fp-a")},
         failure_mode::reject,
         reserve_action::reject_store_failure},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        CHECK(decide_after_reserve(r.result, fp, r.mode) == r.expected);
    }
}

TEST_CASE("decide_after_upstream: 5xx and failures release, the rest is recorded")
{
    CHECK(decide_after_upstream(true, 200) == completion_action::record);
    CHECK(decide_after_upstream(true, 201) == completion_action::record);
    CHECK(decide_after_upstream(true, 302) == completion_action::record);
    CHECK(decide_after_upstream(true, 404) == completion_action::record);
    CHECK(decide_after_upstream(true, 409) == completion_action::record);
    CHECK(decide_after_upstream(true, 499) == completion_action::record);
    CHECK(decide_after_upstream(true, 500) == completion_action::release);
    CHECK(decide_after_upstream(true, 503) == completion_action::release);
    CHECK(decide_after_upstream(false, 0) == completion_action::release);
    CHECK(decide_after_upstream(false, 200) == completion_action::release);
}

TEST_CASE("outcome names are the access log's words")
{
    CHECK(to_string(outcome::executed) == "executed");
    CHECK(to_string(outcome::replayed) == "replayed");
    CHECK(to_string(outcome::conflict) == "conflict");
    CHECK(to_string(outcome::mismatch) == "mismatch");
    CHECK(to_string(outcome::rejected) == "rejected");
    CHECK(to_string(outcome::store_error) == "store_error");
    CHECK(to_string(outcome::pass_through) == "pass_through");
    CHECK(to_string(outcome::upstream_error) == "upstream_error");
}

TEST_CASE("shadow mode: every enforcement answer maps to a finding, forwarding is never one")
{
    using namespace idemgate::gateway;
    const std::pair<reserve_action, shadow_finding> rows[] = {
        {reserve_action::forward_and_record, shadow_finding::none},
        {reserve_action::pass_through_store_failure, shadow_finding::none},
        {reserve_action::replay, shadow_finding::would_replay},
        {reserve_action::in_flight_conflict, shadow_finding::would_conflict},
        {reserve_action::fingerprint_mismatch, shadow_finding::would_mismatch},
        {reserve_action::reject_store_failure, shadow_finding::would_reject},
    };
    for (auto [action, finding] : rows)
        CHECK(shadow_after_reserve(action) == finding);
    CHECK(shadow_after_classify(request_verdict::guard) == shadow_finding::none);
    CHECK(shadow_after_classify(request_verdict::pass_through) == shadow_finding::none);
    for (auto v : {request_verdict::reject_missing_key, request_verdict::reject_invalid_key,
                   request_verdict::reject_missing_tenant, request_verdict::reject_invalid_tenant})
        CHECK(shadow_after_classify(v) == shadow_finding::would_reject);
    CHECK(to_string(shadow_finding::would_replay) == "would_replay");
}

TEST_CASE("phase 3 with on_unknown_outcome: only a sent, unanswered request is held")
{
    using namespace idemgate::gateway;
    using idemgate::config::unknown_outcome_mode;
    struct row {
        bool answered;
        unsigned status;
        bool sent;
        unknown_outcome_mode mode;
        completion_action expected;
    };
    const row rows[] = {
        {true, 201, true, unknown_outcome_mode::hold, completion_action::record},
        {true, 503, true, unknown_outcome_mode::hold, completion_action::release},
        {false, 504, true, unknown_outcome_mode::hold, completion_action::hold},
        {false, 502, true, unknown_outcome_mode::hold, completion_action::hold},
        {false, 502, false, unknown_outcome_mode::hold, completion_action::release},
        {false, 504, true, unknown_outcome_mode::release, completion_action::release},
    };
    for (const auto& r : rows) {
        CAPTURE(r.status);
        CAPTURE(r.sent);
        CHECK(decide_after_upstream(r.answered, r.status, r.sent, r.mode) == r.expected);
    }
}

TEST_CASE("a held key answers outcome_unknown to a duplicate, a mismatch to another request")
{
    using namespace idemgate::gateway;
    idemgate::store::reserve_result held;
    held.existing.emplace();
    held.existing->state = idemgate::store::record_state::outcome_unknown;
    held.existing->fingerprint = "f";
    CHECK(decide_after_reserve(held, "f", idemgate::config::failure_mode::reject) ==
          reserve_action::outcome_unknown);
    CHECK(decide_after_reserve(held, "g", idemgate::config::failure_mode::reject) ==
          reserve_action::fingerprint_mismatch);
}

TEST_CASE("decide_after_wait: what a wait-mode duplicate answers once the wait is over")
{
    store::wait_result settled;
    settled.existing = rec(store::record_state::completed, "fp");
    CHECK(decide_after_wait(settled, "fp") == reserve_action::replay);
    CHECK(decide_after_wait(settled, "other") == reserve_action::fingerprint_mismatch);

    store::wait_result released; // no record: the first request failed and freed the key
    CHECK(decide_after_wait(released, "fp") == reserve_action::released_conflict);

    store::wait_result held;
    held.existing = rec(store::record_state::outcome_unknown, "fp");
    CHECK(decide_after_wait(held, "fp") == reserve_action::outcome_unknown);

    store::wait_result timed_out;
    timed_out.timed_out = true;
    timed_out.existing = rec(store::record_state::in_flight, "fp");
    CHECK(decide_after_wait(timed_out, "fp") == reserve_action::in_flight_conflict);

    store::wait_result retaken; // released and reserved again by another request meanwhile
    retaken.existing = rec(store::record_state::in_flight, "fp");
    CHECK(decide_after_wait(retaken, "fp") == reserve_action::in_flight_conflict);

    // A store failure never lets the duplicate through: the first may still be running.
    store::wait_result failed;
    failed.ec = make_error_code(error::store_timeout);
    CHECK(decide_after_wait(failed, "fp") == reserve_action::in_flight_conflict);
    CHECK(shadow_after_reserve(reserve_action::released_conflict) == shadow_finding::would_conflict);
}

TEST_CASE("decide_after_admit: quota verdicts and store failures")
{
    using config::failure_mode;
    store::admit_result ok;
    CHECK(decide_after_admit(ok, failure_mode::reject) == quota_action::forward);
    store::admit_result busy;
    busy.verdict = store::admission::too_many_in_flight;
    CHECK(decide_after_admit(busy, failure_mode::reject) == quota_action::reject_quota);
    CHECK(decide_after_admit(busy, failure_mode::pass_through) == quota_action::reject_quota);
    store::admit_result fast;
    fast.verdict = store::admission::rate_exceeded;
    CHECK(decide_after_admit(fast, failure_mode::reject) == quota_action::reject_quota);
    store::admit_result failed;
    failed.ec = make_error_code(error::store_unavailable);
    CHECK(decide_after_admit(failed, failure_mode::reject) == quota_action::reject_store_failure);
    CHECK(decide_after_admit(failed, failure_mode::pass_through) == quota_action::forward);
}

TEST_CASE("resolve_tenant_policy: the tenant's entry, else default, else the route's TTLs")
{
    config::config cfg;
    auto route = guarded_policy();
    route.lock_ttl = config::duration(30000);
    route.record_ttl = config::duration(86400000);
    auto none = resolve_tenant_policy(cfg, route, "acme");
    CHECK_FALSE(none.limited);
    CHECK(none.lock_ttl == route.lock_ttl);
    CHECK(none.record_ttl == route.record_ttl);

    config::tenant_config acme;
    acme.max_in_flight = 5;
    acme.record_ttl = config::duration(3600000);
    cfg.tenants.emplace("acme", acme);
    config::tenant_config fallback;
    fallback.new_keys_per_second = 2.5;
    fallback.lock_ttl = config::duration(10000);
    cfg.tenants.emplace("default", fallback);

    auto a = resolve_tenant_policy(cfg, route, "acme");
    CHECK(a.limited);
    CHECK(a.limits.max_in_flight == 5);
    CHECK(a.limits.new_keys_per_second == 0);
    CHECK(a.record_ttl == config::duration(3600000));
    CHECK(a.lock_ttl == route.lock_ttl);

    auto other = resolve_tenant_policy(cfg, route, "globex");
    CHECK(other.limited);
    CHECK(other.limits.new_keys_per_second == 2.5);
    CHECK(other.lock_ttl == config::duration(10000));
    CHECK(other.record_ttl == route.record_ttl);
}

TEST_CASE("retry_after_seconds rounds up and is at least 1")
{
    CHECK(retry_after_seconds(0) == 1);
    CHECK(retry_after_seconds(250) == 1);
    CHECK(retry_after_seconds(1000) == 1);
    CHECK(retry_after_seconds(1001) == 2);
    CHECK(retry_after_seconds(59999) == 60);
}
