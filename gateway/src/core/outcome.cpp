// SPDX-License-Identifier: Apache-2.0
#include <idemgate/gateway/outcome.hpp>

namespace idemgate::gateway {

std::string_view to_string(outcome o) noexcept
{
    switch (o) {
    case outcome::executed: return "executed";
    case outcome::replayed: return "replayed";
    case outcome::conflict: return "conflict";
    case outcome::mismatch: return "mismatch";
    case outcome::rejected: return "rejected";
    case outcome::store_error: return "store_error";
    case outcome::pass_through: return "pass_through";
    case outcome::released: return "released";
    case outcome::held: return "held";
    case outcome::throttled: return "throttled";
    case outcome::not_replayable: return "not_replayable";
    case outcome::expired: return "expired";
    case outcome::reconciled: return "reconciled";
    }
    return "unknown";
}

std::string_view to_string(key_status s) noexcept
{
    switch (s) {
    case key_status::none: return "";
    case key_status::executed: return "executed";
    case key_status::replayed: return "replayed";
    case key_status::released: return "released";
    case key_status::held: return "held";
    case key_status::in_flight: return "in-flight";
    case key_status::mismatch: return "mismatch";
    case key_status::rejected: return "rejected";
    case key_status::unavailable: return "unavailable";
    case key_status::ignored: return "ignored";
    case key_status::not_replayable: return "not-replayable";
    case key_status::expired: return "expired";
    case key_status::reconciled: return "reconciled";
    }
    return "";
}

std::string_view to_string(shadow_finding f) noexcept
{
    switch (f) {
    case shadow_finding::none: return "none";
    case shadow_finding::would_replay: return "would_replay";
    case shadow_finding::would_conflict: return "would_conflict";
    case shadow_finding::would_mismatch: return "would_mismatch";
    case shadow_finding::would_reject: return "would_reject";
    }
    return "none";
}

} // namespace idemgate::gateway
