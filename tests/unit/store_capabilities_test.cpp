// SPDX-License-Identifier: Apache-2.0
// What a configuration asks of the store, matched against what a backend offers: each setting
// that needs a capability the backend lacks is a problem naming its key path; and a backend's row
// states the capabilities its sessions answer.
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>
#include <idemgate/config/config.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <string>
#include <vector>

namespace cfg = idemgate::config;
namespace store = idemgate::store;

namespace {

unsigned without(store::capability c)
{
    return store::all_capabilities & ~static_cast<unsigned>(c);
}

// Two routes: the first asks for nothing, the second for every capability; one limited tenant.
cfg::config asking_everything()
{
    cfg::config c;
    c.routes.resize(2);
    c.routes[0].idempotency.enabled = true;
    c.routes[0].idempotency.on_unknown_outcome = cfg::unknown_outcome_mode::release;
    auto& p = c.routes[1].idempotency;
    p.enabled = true;
    p.on_in_flight = cfg::in_flight_mode::wait;
    p.tombstone_ttl = cfg::duration(60000);
    p.attempt_header = "Idempotency-Attempt";
    p.reconcile.path = "/orders/{key}";
    p.mode = cfg::route_mode::shadow;
    c.tenants["acme"].max_in_flight = 10;
    return c;
}

} // namespace

TEST_CASE("a backend offering every capability satisfies every route and tenant")
{
    CHECK(store::missing_capabilities(asking_everything(), store::all_capabilities, "memory").empty());
    CHECK(store::check_store_capabilities(asking_everything(), cfg::store_type::memory).empty());
    CHECK(store::check_store_capabilities(asking_everything(), cfg::store_type::redis).empty());
    CHECK(store::backend_capabilities(cfg::store_type::memory) == store::all_capabilities);
    CHECK(store::backend_capabilities(cfg::store_type::redis) == store::all_capabilities);
}

TEST_CASE("each missing capability is refused at the key that asks for it")
{
    const auto c = asking_everything();
    using v = std::vector<std::string>;
    CHECK(store::missing_capabilities(c, without(store::capability::tombstones), "map") ==
          v{"routes[1].idempotency.tombstone_ttl: store.type map does not keep tombstones"});
    CHECK(store::missing_capabilities(c, without(store::capability::wait), "map") ==
          v{"routes[1].idempotency.on_in_flight: store.type map cannot make a duplicate wait for the first "
            "answer"});
    CHECK(store::missing_capabilities(c, without(store::capability::attempts), "map") ==
          v{"routes[1].idempotency.attempt_header: store.type map does not count executions"});
    CHECK(store::missing_capabilities(c, without(store::capability::probes), "map") ==
          v{"routes[1].idempotency.reconcile.path: store.type map does not keep a schedule of probes"});
    CHECK(store::missing_capabilities(c, without(store::capability::quotas), "map") ==
          v{"tenants.acme.max_in_flight: store.type map does not keep tenant quotas"});
    CHECK(store::missing_capabilities(c, without(store::capability::shadow_report), "map") ==
          v{"routes[1].idempotency.mode: store.type map does not keep a shadow report"});
    CHECK(store::missing_capabilities(c, without(store::capability::held), "map") ==
          v{"routes[1].idempotency.on_unknown_outcome: store.type map does not keep an index of held keys"});
    CHECK(store::missing_capabilities(c, 0, "map").size() == 7);
}

TEST_CASE("a route without an idempotency block and an unlimited tenant ask for nothing")
{
    cfg::config c = asking_everything();
    c.routes[1].idempotency.enabled = false;
    c.tenants["acme"].max_in_flight = 0;
    c.tenants["globex"].record_ttl = cfg::duration(1000);
    CHECK(store::missing_capabilities(c, 0, "map").empty());
    c.tenants["globex"].new_keys_per_second = 2;
    CHECK(store::missing_capabilities(c, 0, "map") ==
          std::vector<std::string>{
              "tenants.globex.new_keys_per_second: store.type map does not keep tenant quotas"});
}

namespace {

// The capability bits a session answers with a non-null accessor.
unsigned answered(store::session& s)
{
    unsigned out = 0;
    auto bit = [&](bool offered, store::capability c) { out |= offered ? static_cast<unsigned>(c) : 0u; };
    bit(s.waits() != nullptr, store::capability::wait);
    bit(s.tombstones() != nullptr, store::capability::tombstones);
    bit(s.attempts() != nullptr, store::capability::attempts);
    bit(s.probes() != nullptr, store::capability::probes);
    bit(s.quotas() != nullptr, store::capability::quotas);
    bit(s.shadows() != nullptr, store::capability::shadow_report);
    bit(s.held() != nullptr, store::capability::held);
    return out;
}

void check_row_matches_session(cfg::store_type type)
{
    cfg::store_config c;
    c.choose(type);
    boost::asio::io_context ioc;
    auto backend = store::make_backend(c);
    auto session = backend->open_session(ioc.get_executor());
    CHECK(answered(*session) == store::backend_capabilities(type));
}

} // namespace

TEST_CASE("an in-process backend's row states exactly the capabilities its sessions answer")
{
    check_row_matches_session(cfg::store_type::memory);
#ifdef IDEMGATE_TEST_BACKEND
    check_row_matches_session(cfg::store_type::map);
#endif
}
