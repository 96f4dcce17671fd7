// SPDX-License-Identifier: Apache-2.0
#include <array>
#include <doctest/doctest.h>
#include <idemgate/common/error.hpp>
#include <idemgate/gateway/decision.hpp>
#include <map>
#include <string>
#include <vector>

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

TEST_CASE("decide_on_tombstone: the same request is refused as expired, another one as a mismatch")
{
    auto tomb = rec(store::record_state::tombstone, "fp-a");
    CHECK(decide_on_tombstone(tomb, "fp-a") == reserve_action::record_expired);
    CHECK(decide_on_tombstone(tomb, "fp-b") == reserve_action::fingerprint_mismatch);
    CHECK(shadow_after_reserve(reserve_action::record_expired) == shadow_finding::would_conflict);
    CHECK(shadow_after_reserve(reserve_action::not_replayable) == shadow_finding::would_conflict);
    CHECK(to_string(outcome::not_replayable) == "not_replayable");
    CHECK(to_string(outcome::expired) == "expired");
    CHECK(to_string(key_status::not_replayable) == "not-replayable");
    CHECK(to_string(outcome::reconciled) == "reconciled");
    CHECK(to_string(key_status::reconciled) == "reconciled");
    CHECK(to_string(key_status::expired) == "expired");
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
        {"status-only (too large to record), same fingerprint",
         {{}, false, rec(store::record_state::status_only, "fp-a")},
         failure_mode::reject,
         reserve_action::not_replayable},
        {"status-only, other fingerprint",
         {{}, false, rec(store::record_state::status_only, "fp-b")},
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
        {"unreplicated reservation (strict), even with pass_through",
         {{}, false, std::nullopt, true},
         failure_mode::pass_through,
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

TEST_CASE(
    "decide_after_reserve with the route's rules: shadow observes, wait waits, tombstones are looked for")
{
    using config::failure_mode;
    const std::string fp = "fp-a";
    const store::reserve_result acquired{{}, true, std::nullopt};
    const store::reserve_result in_flight{{}, false, rec(store::record_state::in_flight, "fp-a")};
    const store::reserve_result finished{{}, false, rec(store::record_state::completed, "fp-a")};
    const store::reserve_result other{{}, false, rec(store::record_state::completed, "fp-b")};
    const store::reserve_result failed{make_error_code(error::store_unavailable), false, std::nullopt};
    struct row {
        const char* name;
        store::reserve_result result;
        reserve_rules rules;
        reserve_action expected;
    };
    const reserve_rules enforce{};
    const reserve_rules shadow{failure_mode::reject, true, false, false};
    const reserve_rules shadow_all{failure_mode::reject, true, true, true};
    const reserve_rules waits{failure_mode::reject, false, true, false};
    const reserve_rules tombstones{failure_mode::reject, false, false, true};
    const reserve_rules tombstones_pass{failure_mode::pass_through, false, true, true};
    const row rows[] = {
        {"enforce: acquired", acquired, enforce, reserve_action::forward_and_record},
        {"enforce: in flight", in_flight, enforce, reserve_action::in_flight_conflict},
        {"enforce: store failed", failed, enforce, reserve_action::reject_store_failure},
        {"shadow: acquired is forwarded as owner", acquired, shadow, reserve_action::forward_and_record},
        {"shadow: a replay is observed", finished, shadow, reserve_action::observe},
        {"shadow: a mismatch is observed", other, shadow, reserve_action::observe},
        {"shadow: a conflict is observed", in_flight, shadow, reserve_action::observe},
        {"shadow: a store failure is observed", failed, shadow, reserve_action::observe},
        {"shadow never waits", in_flight, shadow_all, reserve_action::observe},
        {"shadow never looks for tombstones", acquired, shadow_all, reserve_action::forward_and_record},
        {"wait: in flight waits", in_flight, waits, reserve_action::wait_for_first},
        {"wait: finished replays", finished, waits, reserve_action::replay},
        {"wait: acquired forwards", acquired, waits, reserve_action::forward_and_record},
        {"tombstones: acquired looks", acquired, tombstones, reserve_action::look_for_tombstone},
        {"tombstones: finished replays", finished, tombstones, reserve_action::replay},
        {"tombstones: in flight conflicts", in_flight, tombstones, reserve_action::in_flight_conflict},
        {"tombstones, pass_through: a failure passes", failed, tombstones_pass,
         reserve_action::pass_through_store_failure},
    };
    for (const auto& r : rows) {
        CAPTURE(r.name);
        CHECK(decide_after_reserve(r.result, fp, r.rules) == r.expected);
    }
    // The finding of an observed request is that of the enforcing decision.
    CHECK(shadow_after_reserve(decide_after_reserve(finished, fp, failure_mode::reject)) ==
          shadow_finding::would_replay);
    CHECK(shadow_after_reserve(reserve_action::observe) == shadow_finding::none);
    CHECK(shadow_after_reserve(reserve_action::wait_for_first) == shadow_finding::would_conflict);
}

TEST_CASE("reserve_rules_of reads the route's mode, on_in_flight and tombstone_ttl")
{
    config::idempotency_config policy;
    auto r = reserve_rules_of(policy, config::failure_mode::pass_through);
    CHECK(r.on_failure == config::failure_mode::pass_through);
    CHECK_FALSE(r.shadow);
    CHECK_FALSE(r.waits);
    CHECK_FALSE(r.tombstones);
    policy.mode = config::route_mode::shadow;
    policy.on_in_flight = config::in_flight_mode::wait;
    policy.tombstone_ttl = std::chrono::milliseconds(1);
    r = reserve_rules_of(policy, config::failure_mode::reject);
    CHECK(r.shadow);
    CHECK(r.waits);
    CHECK(r.tombstones);
}

TEST_CASE("decide_after_tombstone: what a free key on a route with tombstones answers")
{
    using config::failure_mode;
    store::tombstone_result none;
    CHECK(decide_after_tombstone(none, "fp", failure_mode::reject) == reserve_action::forward_and_record);
    store::tombstone_result buried;
    buried.tombstone = rec(store::record_state::tombstone, "fp");
    CHECK(decide_after_tombstone(buried, "fp", failure_mode::reject) == reserve_action::record_expired);
    CHECK(decide_after_tombstone(buried, "other", failure_mode::pass_through) ==
          reserve_action::fingerprint_mismatch);
    store::tombstone_result failed;
    failed.ec = make_error_code(error::store_unavailable);
    CHECK(decide_after_tombstone(failed, "fp", failure_mode::reject) == reserve_action::reject_store_failure);
    CHECK(decide_after_tombstone(failed, "fp", failure_mode::pass_through) ==
          reserve_action::forward_and_record);
}

TEST_CASE("decide_after_upstream: by default 5xx, 408, 425, 429 and failures release, the rest is recorded")
{
    CHECK(decide_after_upstream({true, 100}) == completion_action::record);
    CHECK(decide_after_upstream({true, 200}) == completion_action::record);
    CHECK(decide_after_upstream({true, 201}) == completion_action::record);
    CHECK(decide_after_upstream({true, 302}) == completion_action::record);
    CHECK(decide_after_upstream({true, 404}) == completion_action::record);
    CHECK(decide_after_upstream({true, 409}) == completion_action::record);
    CHECK(decide_after_upstream({true, 499}) == completion_action::record);
    CHECK(decide_after_upstream({true, 401}) == completion_action::record);
    CHECK(decide_after_upstream({true, 407}) == completion_action::record);
    CHECK(decide_after_upstream({true, 408}) == completion_action::release);
    CHECK(decide_after_upstream({true, 425}) == completion_action::release);
    CHECK(decide_after_upstream({true, 429}) == completion_action::release);
    CHECK(decide_after_upstream({true, 430}) == completion_action::record);
    CHECK(decide_after_upstream({true, 500}) == completion_action::release);
    CHECK(decide_after_upstream({true, 503}) == completion_action::release);
    CHECK(decide_after_upstream({true, 599}) == completion_action::release);
    CHECK(decide_after_upstream({true, 600}) == completion_action::release); // outside 100-599: as 5xx
    CHECK(decide_after_upstream({true, 99}) == completion_action::release);
    CHECK(decide_after_upstream({false, 0}) == completion_action::release);
    CHECK(decide_after_upstream({false, 200}) == completion_action::release);
}

TEST_CASE("on_status: entries over the defaults, a code beats its class, only answered statuses")
{
    using config::status_action;
    using config::unknown_outcome_mode;
    using enum completion_action;
    auto policy = [](std::array<status_action, 5> classes, std::map<unsigned, status_action> codes) {
        config::status_policy p;
        auto all = config::status_policy::default_codes();
        for (auto [code, action] : codes)
            all[code] = action;
        p.resolve(classes, all);
        return p;
    };
    const auto r = status_action::record, rl = status_action::release, h = status_action::hold;
    auto defaults = config::status_policy::default_classes;
    struct row {
        const char* what;
        config::status_policy on_status;
        bool answered;
        unsigned status;
        bool sent;
        unknown_outcome_mode on_unknown;
        completion_action expected;
    };
    const row rows[] = {
        {"payment API: 500 held", policy(defaults, {{500, h}}), true, 500, true,
         unknown_outcome_mode::release, hold},
        {"payment API: 503 still released", policy(defaults, {{500, h}}), true, 503, true,
         unknown_outcome_mode::release, release},
        {"401 released when configured", policy(defaults, {{401, rl}}), true, 401, true,
         unknown_outcome_mode::release, release},
        {"401 recorded by default", policy(defaults, {}), true, 401, true, unknown_outcome_mode::release,
         record},
        {"5xx: hold holds 502 from the upstream", policy({r, r, r, r, h}, {}), true, 502, true,
         unknown_outcome_mode::release, hold},
        {"a code beats its class: 4xx hold keeps 429 released", policy({r, r, r, h, rl}, {}), true, 429, true,
         unknown_outcome_mode::release, release},
        {"4xx hold holds 404", policy({r, r, r, h, rl}, {}), true, 404, true, unknown_outcome_mode::release,
         hold},
        {"429 recorded when configured", policy(defaults, {{429, r}}), true, 429, true,
         unknown_outcome_mode::release, record},
        {"2xx released", policy({r, rl, r, r, rl}, {}), true, 201, true, unknown_outcome_mode::release,
         release},
        {"5xx record: 500 recorded", policy({r, r, r, r, r}, {}), true, 500, true,
         unknown_outcome_mode::release, record},
        // The gateway's own 502/504 never take on_status: they follow on_unknown_outcome.
        {"own 502, 5xx hold, on_unknown release", policy({r, r, r, r, h}, {}), false, 502, true,
         unknown_outcome_mode::release, release},
        {"own 504, 5xx record, on_unknown hold", policy({r, r, r, r, r}, {}), false, 504, true,
         unknown_outcome_mode::hold, hold},
        {"own 502 before the request was written", policy({r, r, r, r, h}, {{502, h}}), false, 502, false,
         unknown_outcome_mode::hold, release},
    };
    for (const auto& row : rows) {
        CAPTURE(row.what);
        CHECK(decide_after_upstream({row.answered, row.status, row.sent}, row.on_unknown, row.on_status) ==
              row.expected);
    }
}

TEST_CASE("what the client is told after a settled forward")
{
    CHECK(status_after_settle(completion_action::record, true) == key_status::executed);
    CHECK(status_after_settle(completion_action::release, true) == key_status::released);
    CHECK(status_after_settle(completion_action::hold, true) == key_status::held);
    // The store failed: nothing recorded or held, the key frees at lock_ttl.
    CHECK(status_after_settle(completion_action::record, false) == key_status::released);
    CHECK(status_after_settle(completion_action::hold, false) == key_status::released);
    CHECK(to_string(key_status::in_flight) == "in-flight");
    CHECK(to_string(key_status::unavailable) == "unavailable");
    CHECK(to_string(key_status::none).empty());
}

TEST_CASE("replays drop Date and the configured fields; a trailing * is a prefix")
{
    const std::vector<std::string> drop{"Set-Cookie", "Retry-After", "X-RateLimit-*",
                                        "RateLimit",  "RateLimit-*", "RateLimit-Policy"};
    for (const char* name :
         {"Date", "date", "Set-Cookie", "retry-after", "X-RateLimit-Remaining", "x-ratelimit-limit",
          "X-RateLimit-", "RateLimit", "ratelimit-reset", "RateLimit-Policy"}) {
        CAPTURE(name);
        CHECK(dropped_from_replay(name, drop));
    }
    for (const char* name : {"Location", "ETag", "X-RateLimit", "RateLimits", "Content-Type", "Dates",
                             "Retry-After2", "X-Upstream-Execution"}) {
        CAPTURE(name);
        CHECK_FALSE(dropped_from_replay(name, drop));
    }
    CHECK(dropped_from_replay("Date", {}));
    CHECK_FALSE(dropped_from_replay("Set-Cookie", {}));
    // Case folding is ASCII letters only: '-' and '_' differ.
    CHECK_FALSE(dropped_from_replay("Retry_After", drop));
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
    CHECK(to_string(outcome::released) == "released");
    CHECK(to_string(outcome::held) == "held");
    CHECK(to_string(outcome::throttled) == "throttled");
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
        CHECK(decide_after_upstream({r.answered, r.status, r.sent}, r.mode) == r.expected);
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
