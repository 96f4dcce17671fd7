// SPDX-License-Identifier: Apache-2.0
// The client lookup phase: GET <client_lookup_path><key> answered from the store in the caller's
// own scope (classify and scope resolved it exactly as for a request to the route).
#include "idempotency/refusal.hpp"
#include "idempotency/request_phases.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

boost::asio::awaitable<void> request_phases::client_lookup()
{
    auto found = co_await w_.store->lookup(scope_);
    if (found.ec) {
        log::warn("store lookup failed",
                  {{"error", found.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}});
        refuse({refusal::store_unavailable});
        co_return;
    }
    boost::json::object body;
    body["state"] = "absent";
    body["status"] = nullptr;
    body["created"] = nullptr;
    body["expires"] = nullptr;
    body["location"] = nullptr;
    body["replayable"] = false;
    auto rec = std::move(found.existing);
    if (!rec && policy().tombstone_ttl.count() > 0) {
        // No record: it may have expired and left a tombstone (tombstone_ttl).
        store::tombstone_result buried;
        buried.ec = make_error_code(error::store_unavailable);
        if (auto* tombstones = w_.store->tombstones())
            buried = co_await tombstones->find_tombstone(scope_);
        if (buried.ec) {
            log::warn("store lookup failed",
                      {{"error", buried.ec.message()}, {"tenant", h_.tenant}, {"key", h_.key}});
            refuse({refusal::store_unavailable});
            co_return;
        }
        rec = std::move(buried.tombstone);
    }
    if (rec) {
        switch (rec->state) {
        case store::record_state::in_flight: body["state"] = "in_flight"; break;
        case store::record_state::outcome_unknown: body["state"] = "outcome_unknown"; break;
        case store::record_state::completed:
            body["state"] = "completed";
            body["status"] = rec->response.status;
            body["replayable"] = true;
            break;
        case store::record_state::status_only: // ran; its answer was too large to record
            body["state"] = "completed";
            body["status"] = rec->response.status;
            break;
        case store::record_state::tombstone: // ran; its record expired
            body["state"] = "expired";
            body["status"] = rec->response.status;
            break;
        }
        if (rec->created_unix_ms > 0)
            body["created"] = rfc3339_utc(rec->created_unix_ms);
        if (found.expires_in_ms > 0 && rec->state != store::record_state::tombstone)
            body["expires"] = rfc3339_utc(log::now_unix_ms() + found.expires_in_ms);
        if (auto location = original_location(*rec); !location.empty())
            body["location"] = location;
    }
    h_.response = response_type{http::status::ok, version_};
    h_.response.set(http::field::content_type, "application/json");
    h_.response.set(http::field::cache_control, "no-store");
    h_.response.body() = boost::json::serialize(body);
    h_.response.keep_alive(req_.keep_alive());
    h_.response.prepare_payload();
}

} // namespace idemgate::gateway::detail
