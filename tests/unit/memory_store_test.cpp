#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>
#include <idemgate/common/error.hpp>
#include <idemgate/store/memory_store.hpp>

using namespace idemgate;
using namespace std::chrono_literals;

namespace {

// A manual clock so TTLs are tested without sleeping.
struct fake_clock {
    std::chrono::steady_clock::time_point now = std::chrono::steady_clock::time_point{} + 1h;
};

template<class Awaitable>
auto run(boost::asio::io_context& ioc, Awaitable a)
{
    auto f = boost::asio::co_spawn(ioc, std::move(a), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    return f.get();
}

store::record in_flight(std::string token, std::string fp = "fp")
{
    store::record r;
    r.state = store::record_state::in_flight;
    r.fingerprint = std::move(fp);
    r.owner_token = std::move(token);
    return r;
}

store::record completed(std::string token, std::string body)
{
    store::record r = in_flight(std::move(token));
    r.state = store::record_state::completed;
    r.response.status = 201;
    r.response.headers = {{"Content-Type", "application/json"}};
    r.response.body = std::move(body);
    return r;
}

struct fixture {
    fake_clock clock;
    boost::asio::io_context ioc;
    std::shared_ptr<store::backend> backend;
    std::unique_ptr<store::session> s;
    explicit fixture(std::size_t max_entries = 100, std::size_t max_bytes = 1 << 20)
    {
        store::memory_options o;
        o.max_entries = max_entries;
        o.max_bytes = max_bytes;
        o.now = [this] { return clock.now; };
        backend = store::make_memory_backend(o);
        s = backend->open_session(ioc.get_executor());
    }
};

} // namespace

TEST_CASE("memory store: reserve, duplicate sees in-flight, complete, duplicate sees the response")
{
    fixture f;
    store::scope sc{"", "k"};
    auto r1 = run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s));
    CHECK_FALSE(r1.ec);
    CHECK(r1.acquired);
    auto r2 = run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s));
    REQUIRE_FALSE(r2.acquired);
    REQUIRE(r2.existing);
    CHECK(r2.existing->state == store::record_state::in_flight);
    CHECK(r2.existing->owner_token == "t1");
    CHECK_FALSE(run(f.ioc, f.s->complete(sc, completed("t1", "body"), 24h)));
    auto r3 = run(f.ioc, f.s->reserve(sc, in_flight("t3"), 30s));
    REQUIRE(r3.existing);
    CHECK(r3.existing->state == store::record_state::completed);
    CHECK(r3.existing->response.body == "body");
    CHECK(r3.existing->response.status == 201);
    CHECK(f.backend->ready());
}

TEST_CASE("memory store: lock_ttl expiry frees the key and a late complete is refused")
{
    fixture f;
    store::scope sc{"", "k"};
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s)).acquired);
    f.clock.now += 31s;
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
    // The first owner's lock expired and t2 took the key: t1 must not overwrite it.
    CHECK(run(f.ioc, f.s->complete(sc, completed("t1", "late"), 24h)) == make_error_code(error::not_owner));
    auto r = run(f.ioc, f.s->reserve(sc, in_flight("t3"), 30s));
    REQUIRE(r.existing);
    CHECK(r.existing->owner_token == "t2");
    CHECK(r.existing->state == store::record_state::in_flight);
}

TEST_CASE("memory store: record_ttl expiry lets the key run again")
{
    fixture f;
    store::scope sc{"", "k"};
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s)).acquired);
    CHECK_FALSE(run(f.ioc, f.s->complete(sc, completed("t1", "b"), 1h)));
    f.clock.now += 59min;
    CHECK_FALSE(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
    f.clock.now += 2min;
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t3"), 30s)).acquired);
}

TEST_CASE("memory store: release only by the owner")
{
    fixture f;
    store::scope sc{"", "k"};
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t1"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->release(sc, "other")) == make_error_code(error::not_owner));
    CHECK_FALSE(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
    CHECK_FALSE(run(f.ioc, f.s->release(sc, "t1")));
    CHECK(run(f.ioc, f.s->reserve(sc, in_flight("t2"), 30s)).acquired);
}

TEST_CASE("memory store: tenants are separate scopes that cannot collide")
{
    fixture f;
    CHECK(run(f.ioc, f.s->reserve({"a", "k"}, in_flight("t1"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"b", "k"}, in_flight("t2"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "k"}, in_flight("t3"), 30s)).acquired);
    // "ab"+"c" and "a"+"bc" concatenate alike; the length prefix keeps them apart.
    CHECK(run(f.ioc, f.s->reserve({"ab", "c"}, in_flight("t4"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"a", "bc"}, in_flight("t5"), 30s)).acquired);
    CHECK(store::scope_map_key({"ab", "c"}) != store::scope_map_key({"a", "bc"}));
}

TEST_CASE("memory store: the bound refuses new keys but evicts expired ones first")
{
    fixture f(2);
    CHECK(run(f.ioc, f.s->reserve({"", "1"}, in_flight("t"), 10s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "2"}, in_flight("t"), 30s)).acquired);
    auto full = run(f.ioc, f.s->reserve({"", "3"}, in_flight("t"), 30s));
    CHECK(full.ec == make_error_code(error::store_full));
    CHECK_FALSE(full.acquired);
    // Live records are never evicted to make room (that would let a duplicate run); expired ones are.
    f.clock.now += 11s;
    CHECK(run(f.ioc, f.s->reserve({"", "3"}, in_flight("t"), 30s)).acquired);
    CHECK_FALSE(run(f.ioc, f.s->reserve({"", "2"}, in_flight("t"), 30s)).acquired);
}

TEST_CASE(
    "memory store: the byte bound counts bodies, refuses new keys, and frees bytes on expiry and release")
{
    auto one_key = store::charged_bytes(store::scope_map_key({"", "1"}), in_flight("t1"));
    auto big = completed("t1", std::string(4000, 'b'));
    auto big_charge = store::charged_bytes(store::scope_map_key({"", "1"}), big);
    REQUIRE(big_charge > 4000);
    // Room for the big record plus one more in-flight key, not two.
    fixture f(100, big_charge + one_key + one_key / 2);
    CHECK(run(f.ioc, f.s->reserve({"", "1"}, in_flight("t1"), 10s)).acquired);
    // A finished response is always recorded, even though the entry grows.
    CHECK_FALSE(run(f.ioc, f.s->complete({"", "1"}, big, 10s)));
    CHECK(run(f.ioc, f.s->reserve({"", "2"}, in_flight("t2"), 30s)).acquired);
    auto full = run(f.ioc, f.s->reserve({"", "3"}, in_flight("t3"), 30s));
    CHECK(full.ec == make_error_code(error::store_full));
    // Releasing key 2 gives its bytes back.
    CHECK_FALSE(run(f.ioc, f.s->release({"", "2"}, "t2")));
    CHECK(run(f.ioc, f.s->reserve({"", "3"}, in_flight("t3"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "4"}, in_flight("t4"), 30s)).ec == make_error_code(error::store_full));
    // The big record expires: its bytes are swept and new keys fit again.
    f.clock.now += 11s;
    CHECK(run(f.ioc, f.s->reserve({"", "4"}, in_flight("t4"), 30s)).acquired);
    CHECK(run(f.ioc, f.s->reserve({"", "5"}, in_flight("t5"), 30s)).acquired);
}
