// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <idemgate/gateway/decision.hpp>

namespace idemgate::gateway {

bool is_valid_key(std::string_view key) noexcept
{
    if (key.empty() || key.size() > 255)
        return false;
    return std::all_of(key.begin(), key.end(), [](char c) { return c >= 0x21 && c <= 0x7e; });
}

bool is_valid_certificate_tenant(std::string_view name) noexcept
{
    if (name.empty() || name.size() > 255)
        return false;
    // UTF-8 as the certificate carries it; no control characters (they would reach logs and keys).
    return std::none_of(name.begin(), name.end(), [](char c) {
        auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}

std::string certificate_scope_tenant(std::string_view name)
{
    std::string out;
    out.reserve(name.size() + 1);
    out.push_back('\x01');
    for (char c : name) {
        if (c == ' ')
            out += "%20";
        else if (c == '%')
            out += "%25";
        else
            out.push_back(c);
    }
    return out;
}

bool guards_method(const config::idempotency_config& policy, std::string_view method) noexcept
{
    return std::any_of(policy.methods.begin(), policy.methods.end(),
                       [&](const std::string& m) { return m == method; });
}

request_verdict classify(const config::idempotency_config& policy, const request_facts& facts) noexcept
{
    if (!policy.enabled)
        return request_verdict::pass_through;
    if (!guards_method(policy, facts.method))
        return request_verdict::pass_through;
    if (facts.key_count == 0)
        return policy.required ? request_verdict::reject_missing_key : request_verdict::pass_through;
    // Exactly one header line: two lines could be read differently by two hops.
    if (facts.key_count > 1 || facts.key_error != key_syntax::ok ||
        check_key_format(policy.key_format, facts.key) != key_format_check::ok)
        return request_verdict::reject_invalid_key;
    if (policy.tenant_scoped()) {
        if (facts.tenant_count == 0)
            return request_verdict::reject_missing_tenant;
        bool valid = policy.tenant_from == config::tenant_source::client_cert
                         ? is_valid_certificate_tenant(facts.tenant)
                         : is_valid_key(facts.tenant);
        if (facts.tenant_count > 1 || !valid)
            return request_verdict::reject_invalid_tenant;
    }
    return request_verdict::guard;
}

std::string invalid_key_detail(const config::idempotency_config& policy, const request_facts& facts)
{
    const auto& header = policy.key_header;
    if (facts.key_count > 1)
        return header + " must appear once; the request has " + std::to_string(facts.key_count) + " lines";
    if (facts.key_error != key_syntax::ok)
        return describe(facts.key_error, facts.key_error_at, header);
    auto must = header + " must be " + describe(policy.key_format);
    switch (check_key_format(policy.key_format, facts.key)) {
    case key_format_check::ok: break;
    case key_format_check::too_short:
    case key_format_check::too_long: return must + "; this key has " + std::to_string(facts.key.size());
    case key_format_check::bad_character: return must + "; this key has a character outside that range";
    case key_format_check::no_match: return must + "; this key does not match";
    }
    return must;
}

namespace {

// What a record someone else made means for a request with `fingerprint`.
reserve_action decide_on_record(const store::record& rec, std::string_view fingerprint) noexcept
{
    if (rec.fingerprint != fingerprint)
        return reserve_action::fingerprint_mismatch;
    if (rec.state == store::record_state::completed)
        return reserve_action::replay;
    if (rec.state == store::record_state::outcome_unknown)
        return reserve_action::outcome_unknown;
    if (rec.state == store::record_state::status_only)
        return reserve_action::not_replayable;
    if (rec.state == store::record_state::tombstone)
        return reserve_action::record_expired;
    return reserve_action::in_flight_conflict;
}

} // namespace

reserve_action decide_on_tombstone(const store::record& tombstone, std::string_view fingerprint) noexcept
{
    return tombstone.fingerprint != fingerprint ? reserve_action::fingerprint_mismatch
                                                : reserve_action::record_expired;
}

reserve_action decide_after_reserve(const store::reserve_result& result, std::string_view fingerprint,
                                    config::failure_mode on_failure) noexcept
{
    if (result.unreplicated) // the store knows the upstream must not run: refused whatever on_failure says
        return reserve_action::reject_store_failure;
    if (result.ec || (!result.acquired && !result.existing))
        return on_failure == config::failure_mode::reject ? reserve_action::reject_store_failure
                                                          : reserve_action::pass_through_store_failure;
    if (result.acquired)
        return reserve_action::forward_and_record;
    return decide_on_record(*result.existing, fingerprint);
}

reserve_rules reserve_rules_of(const config::idempotency_config& policy,
                               config::failure_mode on_failure) noexcept
{
    reserve_rules out;
    out.on_failure = on_failure;
    out.shadow = policy.mode == config::route_mode::shadow;
    out.waits = policy.on_in_flight == config::in_flight_mode::wait;
    out.tombstones = policy.tombstone_ttl.count() > 0;
    return out;
}

reserve_action decide_after_reserve(const store::reserve_result& result, std::string_view fingerprint,
                                    const reserve_rules& rules) noexcept
{
    const auto enforced = decide_after_reserve(result, fingerprint, rules.on_failure);
    if (rules.shadow)
        return enforced == reserve_action::forward_and_record ? enforced : reserve_action::observe;
    if (enforced == reserve_action::in_flight_conflict && rules.waits)
        return reserve_action::wait_for_first;
    if (enforced == reserve_action::forward_and_record && rules.tombstones)
        return reserve_action::look_for_tombstone;
    return enforced;
}

reserve_action decide_after_tombstone(const store::tombstone_result& found, std::string_view fingerprint,
                                      config::failure_mode on_failure) noexcept
{
    if (found.tombstone)
        return decide_on_tombstone(*found.tombstone, fingerprint);
    if (found.ec && on_failure == config::failure_mode::reject)
        return reserve_action::reject_store_failure;
    return reserve_action::forward_and_record;
}

reserve_action decide_after_wait(const store::wait_result& result, std::string_view fingerprint) noexcept
{
    if (result.ec || result.timed_out)
        return reserve_action::in_flight_conflict;
    if (!result.existing)
        return reserve_action::released_conflict;
    return decide_on_record(*result.existing, fingerprint);
}

tenant_policy resolve_tenant_policy(const config::config& cfg, const config::idempotency_config& route,
                                    std::string_view tenant)
{
    tenant_policy out;
    out.lock_ttl = route.lock_ttl;
    out.record_ttl = route.record_ttl;
    const auto* t = cfg.find_tenant(tenant);
    if (!t)
        return out;
    out.limits.max_in_flight = t->max_in_flight;
    out.limits.new_keys_per_second = t->new_keys_per_second;
    out.limited = t->limited();
    out.lock_ttl = t->lock_ttl.value_or(route.lock_ttl);
    out.record_ttl = t->record_ttl.value_or(route.record_ttl);
    return out;
}

quota_action decide_after_admit(const store::admit_result& result, config::failure_mode on_failure) noexcept
{
    if (result.ec)
        return on_failure == config::failure_mode::reject ? quota_action::reject_store_failure
                                                          : quota_action::forward;
    return result.verdict == store::admission::admitted ? quota_action::forward : quota_action::reject_quota;
}

long long retry_after_seconds(long long ms) noexcept
{
    if (ms <= 1000)
        return 1;
    return (ms + 999) / 1000;
}

completion_action decide_after_upstream(after_upstream what, config::unknown_outcome_mode on_unknown,
                                        const config::status_policy& on_status) noexcept
{
    if (!what.answered)
        return what.request_sent && on_unknown == config::unknown_outcome_mode::hold
                   ? completion_action::hold
                   : completion_action::release;
    switch (on_status.action_for(what.status)) {
    case config::status_action::record: return completion_action::record;
    case config::status_action::release: return completion_action::release;
    case config::status_action::hold: return completion_action::hold;
    }
    return completion_action::release;
}

completion_action decide_after_upstream(after_upstream what, config::unknown_outcome_mode on_unknown) noexcept
{
    static const config::status_policy defaults;
    return decide_after_upstream(what, on_unknown, defaults);
}

key_status status_after_settle(completion_action action, bool store_ok) noexcept
{
    if (!store_ok)
        return key_status::released;
    switch (action) {
    case completion_action::record: return key_status::executed;
    case completion_action::release: return key_status::released;
    case completion_action::hold: return key_status::held;
    }
    return key_status::released;
}

namespace {

bool iequals_ascii(std::string_view a, std::string_view b) noexcept
{
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        char x = a[i], y = b[i];
        if (x != y && (x | 0x20) != (y | 0x20))
            return false;
        if (x != y && ((x | 0x20) < 'a' || (x | 0x20) > 'z'))
            return false;
    }
    return true;
}

} // namespace

bool dropped_from_replay(std::string_view name, const std::vector<std::string>& patterns) noexcept
{
    if (iequals_ascii(name, "date"))
        return true;
    for (const auto& p : patterns) {
        std::string_view pattern(p);
        if (!pattern.empty() && pattern.back() == '*') {
            pattern.remove_suffix(1);
            if (name.size() >= pattern.size() && iequals_ascii(name.substr(0, pattern.size()), pattern))
                return true;
        } else if (iequals_ascii(name, pattern)) {
            return true;
        }
    }
    return false;
}

shadow_finding shadow_after_classify(request_verdict v) noexcept
{
    switch (v) {
    case request_verdict::pass_through:
    case request_verdict::guard: return shadow_finding::none;
    case request_verdict::reject_missing_key:
    case request_verdict::reject_invalid_key:
    case request_verdict::reject_missing_tenant:
    case request_verdict::reject_invalid_tenant: return shadow_finding::would_reject;
    }
    return shadow_finding::none;
}

shadow_finding shadow_after_reserve(reserve_action a) noexcept
{
    switch (a) {
    case reserve_action::forward_and_record:
    case reserve_action::pass_through_store_failure:
    case reserve_action::observe:
    case reserve_action::look_for_tombstone: return shadow_finding::none;
    case reserve_action::wait_for_first: return shadow_finding::would_conflict;
    case reserve_action::replay: return shadow_finding::would_replay;
    case reserve_action::in_flight_conflict:
    case reserve_action::released_conflict:
    case reserve_action::outcome_unknown:
    case reserve_action::not_replayable:
    case reserve_action::record_expired: return shadow_finding::would_conflict;
    case reserve_action::fingerprint_mismatch: return shadow_finding::would_mismatch;
    case reserve_action::reject_store_failure: return shadow_finding::would_reject;
    }
    return shadow_finding::none;
}

} // namespace idemgate::gateway
