// SPDX-License-Identifier: Apache-2.0
#include "own/lookup_answer.hpp"

#include "idempotency/refusal.hpp"
#include "idempotency/request_phases.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

response_type lookup_answer(const store::lookup_result& found, unsigned version, bool keep_alive)
{
    boost::json::object body;
    body["state"] = "absent";
    body["status"] = nullptr;
    body["created"] = nullptr;
    body["expires"] = nullptr;
    body["location"] = nullptr;
    body["replayable"] = false;
    if (const auto& rec = found.existing) {
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
    response_type res{http::status::ok, version};
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-store");
    res.body() = boost::json::serialize(body);
    res.keep_alive(keep_alive);
    res.prepare_payload();
    return res;
}

} // namespace idemgate::gateway::detail
