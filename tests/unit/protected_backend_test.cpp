// SPDX-License-Identifier: Apache-2.0
// The protection decorator over the in-process backends: make_backend with store.hash_keys and
// store.encryption hands the memory (and the test-only map) store hashed scopes and sealed
// response parts only, replays the clear answer, keeps scopes apart, opens records under the
// previous key after a rotation and answers record_corrupt (never a record) when none opens.
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <doctest/doctest.h>
#include <idemgate/common/error.hpp>
#include <idemgate/store/backend_factory.hpp>
#include <idemgate/store/protected_backend.hpp>
#include <idemgate/store/record_cipher.hpp>
#include <idemgate/test/secrets.hpp>
#include <vector>

using namespace idemgate;
using namespace std::chrono_literals;
namespace cfg = idemgate::config;

using idemgate::test::key_a;
using idemgate::test::key_b;

namespace {

const std::string secret(32, 's');

template<class Awaitable>
auto run_io(boost::asio::io_context& ioc, Awaitable a)
{
    auto f = boost::asio::co_spawn(ioc, std::move(a), boost::asio::use_future);
    ioc.restart();
    ioc.run();
    return f.get();
}

store::record reserved_record(std::string token)
{
    store::record r;
    r.fingerprint = std::string(64, 'f');
    r.owner_token = std::move(token);
    return r;
}

store::record completed_record(std::string token, std::string body)
{
    auto r = reserved_record(std::move(token));
    r.state = store::record_state::completed;
    r.response.status = 201;
    r.response.reason = "Created";
    r.response.headers = {{"Content-Type", "application/json"}};
    r.response.body = std::move(body);
    return r;
}

// One session over a backend, run on one io_context.
struct store_session {
    explicit store_session(std::shared_ptr<store::backend> b)
        : backend(std::move(b)), session(backend->open_session(ioc.get_executor()))
    {
    }
    store::reserve_result reserve(store::scope s, const store::record& r)
    {
        return run_io(ioc, session->reserve(s, r, 30s));
    }
    boost::system::error_code complete(store::scope s, const store::record& r)
    {
        return run_io(ioc, session->complete(s, r, 60s));
    }
    store::lookup_result lookup(store::scope s) { return run_io(ioc, session->lookup(s)); }

    boost::asio::io_context ioc;
    std::shared_ptr<store::backend> backend;
    std::unique_ptr<store::session> session;
};

std::vector<cfg::store_type> in_process_types()
{
    std::vector<cfg::store_type> out{cfg::store_type::memory};
#ifdef IDEMGATE_TEST_BACKEND
    out.push_back(cfg::store_type::map);
#endif
    return out;
}

store::record_protection protection(std::string current, std::string previous = {})
{
    store::record_protection p;
    p.key_secret = secret;
    p.cipher = store::record_cipher(current, previous);
    return p;
}

} // namespace

TEST_CASE("make_backend wraps a backend only when hash_keys or encryption is on, with the same capabilities")
{
    for (auto type : in_process_types()) {
        cfg::store_config c;
        c.choose(type);
        auto plain = store::make_backend(c);
        c.key_secret = secret;
        c.hash_keys = true;
        c.encryption.key = key_a;
        auto wrapped = store::make_backend(c);
        CHECK(wrapped->kind() == plain->kind());
        // No wrapper: the raw scope names the record; wrapped: its digest does.
        store::scope s{"acme", "order-1"};
        CHECK(plain->record_id(s).find("order-1") != std::string::npos);
        CHECK(wrapped->record_id(s).find("order-1") == std::string::npos);
        CHECK(wrapped->record_id(s).find(store::scope_digest(secret, s)) != std::string::npos);
        boost::asio::io_context ioc;
        auto a = plain->open_session(ioc.get_executor());
        auto b = wrapped->open_session(ioc.get_executor());
        CHECK((a->waits() != nullptr) == (b->waits() != nullptr));
        CHECK((a->tombstones() != nullptr) == (b->tombstones() != nullptr));
        CHECK((a->attempts() != nullptr) == (b->attempts() != nullptr));
        CHECK((a->probes() != nullptr) == (b->probes() != nullptr));
        CHECK((a->quotas() != nullptr) == (b->quotas() != nullptr));
    }
}

TEST_CASE("over an in-process store the decorator stores hashed scopes and sealed answers, and replays them")
{
    for (auto type : in_process_types()) {
        cfg::store_config c;
        c.choose(type);
        auto inner = store::make_backend(c);
        store_session below(inner);
        store_session above(store::protect_backend(inner, protection(key_a)));
        INFO("store " << inner->kind());

        store::scope alice{"ab", "c"};
        store::scope bob{"a", "bc"}; // the same bytes moved between tenant and key
        auto alice_done = completed_record("0123456789abcdef", R"({"card":"4111111111111111"})");
        auto alice_flight = reserved_record("0123456789abcdef");
        REQUIRE(above.reserve(alice, alice_flight).acquired);
        REQUIRE_FALSE(above.complete(alice, alice_done));
        // Another scope never sees alice's record.
        auto bob_flight = reserved_record("fedcba9876543210");
        CHECK(above.reserve(bob, bob_flight).acquired);

        // Below the decorator: nothing under the raw scope; under the hashed one, the sealed part.
        CHECK_FALSE(below.lookup(alice).existing);
        auto digest = store::scope_digest(secret, alice);
        store::scope hashed{{}, digest, true};
        auto kept = below.lookup(hashed);
        REQUIRE(kept.existing);
        CHECK(kept.existing->response.body.empty());
        CHECK(kept.existing->response.headers.empty());
        CHECK_FALSE(kept.existing->sealed_response.empty());
        CHECK(kept.existing->sealed_response.find("4111") == std::string::npos);

        // Above: the clear answer, by reserve (a retry) and by lookup (the admin API).
        auto retry_flight = reserved_record("1111222233334444");
        auto retry = above.reserve(alice, retry_flight);
        REQUIRE_FALSE(retry.ec);
        CHECK_FALSE(retry.acquired);
        REQUIRE(retry.existing);
        CHECK(*retry.existing == alice_done);
        auto found = above.lookup(alice);
        REQUIRE(found.existing);
        CHECK(*found.existing == alice_done);
    }
}

TEST_CASE("rotation over an in-process store: the previous key opens, an unknown key is record_corrupt")
{
    for (auto type : in_process_types()) {
        cfg::store_config c;
        c.choose(type);
        auto inner = store::make_backend(c);
        INFO("store " << inner->kind());
        store::scope s{"", "rotated"};
        auto done = completed_record("aaaa0000aaaa0000", "sealed under A");
        {
            store_session a(store::protect_backend(inner, protection(key_a)));
            auto flight = reserved_record("aaaa0000aaaa0000");
            REQUIRE(a.reserve(s, flight).acquired);
            REQUIRE_FALSE(a.complete(s, done));
        }
        {
            store_session rotated(store::protect_backend(inner, protection(key_b, key_a)));
            auto flight = reserved_record("bbbb0000bbbb0000");
            auto r = rotated.reserve(s, flight);
            REQUIRE_FALSE(r.ec);
            REQUIRE(r.existing);
            CHECK(*r.existing == done);
        }
        {
            // Neither key: never a record, never the key handed out to run again.
            store_session wrong(store::protect_backend(inner, protection(key_b)));
            auto flight = reserved_record("cccc0000cccc0000");
            auto r = wrong.reserve(s, flight);
            CHECK(r.ec == error::record_corrupt);
            CHECK_FALSE(r.acquired);
            CHECK_FALSE(r.existing);
            auto looked = wrong.lookup(s);
            CHECK(looked.ec == error::record_corrupt);
            CHECK_FALSE(looked.existing);
        }
    }
}

TEST_CASE("a tombstone is sealed under its own binding and reads back through the decorator")
{
    for (auto type : in_process_types()) {
        cfg::store_config c;
        c.choose(type);
        auto inner = store::make_backend(c);
        INFO("store " << inner->kind());
        store_session below(inner);
        store_session above(store::protect_backend(inner, protection(key_a)));
        REQUIRE(above.session->tombstones());
        store::scope s{"acme", "buried"};
        auto tomb = reserved_record("0123456789abcdef");
        tomb.state = store::record_state::tombstone;
        tomb.response.status = 201;
        tomb.response.reason = "Created";
        tomb.response.headers = {{"Location", "/orders/7"}};
        tomb.body_length = 12;
        tomb.body_sha256 = std::string(64, 'b');
        REQUIRE_FALSE(run_io(above.ioc, above.session->tombstones()->bury(s, tomb, 60s)));
        auto digest = store::scope_digest(secret, s);
        auto kept =
            run_io(below.ioc, below.session->tombstones()->find_tombstone(store::scope{{}, digest, true}));
        REQUIRE(kept.tombstone);
        CHECK(kept.tombstone->response.headers.empty());
        CHECK_FALSE(kept.tombstone->sealed_response.empty());
        auto found = run_io(above.ioc, above.session->tombstones()->find_tombstone(s));
        REQUIRE_FALSE(found.ec);
        REQUIRE(found.tombstone);
        CHECK(*found.tombstone == tomb);
    }
}
