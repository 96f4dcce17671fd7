// The client lookup phase: GET <client_lookup_path><key> answered from the store in the caller's
// own scope (classify and scope resolved it exactly as for a request to the route).
#include "idempotency/request_phases.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <cstdio>
#include <ctime>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

namespace {

// RFC 3339 in UTC with milliseconds: 2026-12-02T22:52:29.123Z.
std::string rfc3339(std::int64_t unix_ms)
{
    std::time_t seconds = static_cast<std::time_t>(unix_ms / 1000);
    std::tm utc{};
    gmtime_r(&seconds, &utc);
    char text[40];
    std::size_t n = std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%S", &utc);
    std::snprintf(text + n, sizeof text - n, ".%03dZ", static_cast<int>(unix_ms % 1000));
    return text;
}

} // namespace

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
    // Only a record can be reported today; "expired" (a tombstone left after the record) and a
    // record kept without its answer (replayable: false) are states the store does not keep yet.
    if (const auto& rec = found.existing) {
        switch (rec->state) {
        case store::record_state::in_flight: body["state"] = "in_flight"; break;
        case store::record_state::outcome_unknown: body["state"] = "outcome_unknown"; break;
        case store::record_state::completed:
            body["state"] = "completed";
            body["status"] = rec->response.status;
            body["replayable"] = true;
            break;
        }
        if (rec->created_unix_ms > 0)
            body["created"] = rfc3339(rec->created_unix_ms);
        if (found.expires_in_ms > 0)
            body["expires"] = rfc3339(log::now_unix_ms() + found.expires_in_ms);
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
