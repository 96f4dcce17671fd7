// SPDX-License-Identifier: Apache-2.0
// What the Redis store sends for reserve and complete, against a real redis-server: the bytes of
// each command (the server's total_net_input_bytes), and the owner check the complete script
// makes from the record's own token (packed, unpacked, long, sealed, one byte off).
#include "redis/redis_scripts.hpp"
#include "redis_store_fixture.hpp"

#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>

using namespace idemgate;
using namespace idemgate::test;
using namespace std::chrono_literals;
using store::record;
using store::record_state;

namespace {

// The bytes of a command as RESP sends it: *n, then $len and the bytes of each argument.
std::size_t resp_size(const std::vector<std::string>& args)
{
    auto line = [](std::size_t n) { return std::to_string(n).size() + 3; }; // '*' or '$', CRLF
    std::size_t total = line(args.size());
    for (const auto& a : args)
        total += line(a.size()) + a.size() + 2;
    return total;
}

// What the server has read from all its clients so far.
long long net_input_bytes(redis_server& redis)
{
    auto info = redis.command({"INFO", "stats"});
    auto pos = info.find("total_net_input_bytes:");
    REQUIRE(pos != std::string::npos);
    return std::stoll(info.substr(pos + 22));
}

} // namespace

TEST_CASE("reserve and complete send only the key, the record and a compact TTL")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    const auto token = std::string("0123456789abcdef0123456789abcdef");
    // The first complete caches the script (NOSCRIPT, then EVAL); the one measured is an EVALSHA.
    REQUIRE(f.reserve("", "warm", in_flight_record(token)).acquired);
    REQUIRE_FALSE(f.complete("", "warm", completed_record(token, "{}")));

    // What the INFO command between two readings adds itself.
    auto info_bytes = resp_size({"INFO", "stats"});
    auto sent = [&](auto&& operation) {
        auto before = net_input_bytes(redis);
        operation();
        return static_cast<std::size_t>(net_input_bytes(redis) - before) - info_bytes;
    };
    auto in_flight = in_flight_record(token);
    auto reserve_bytes = sent([&] { REQUIRE(f.reserve("", "k", in_flight, 30s).acquired); });
    CHECK(reserve_bytes ==
          resp_size({"SET", key_of("", "k"), store::encode_record(in_flight), "NX", "EX", "30", "GET"}));
    // A TTL that is not whole seconds stays in milliseconds.
    auto odd_ttl_bytes = sent([&] { REQUIRE(f.reserve("", "k2", in_flight, 1500ms).acquired); });
    CHECK(odd_ttl_bytes ==
          resp_size({"SET", key_of("", "k2"), store::encode_record(in_flight), "NX", "PX", "1500", "GET"}));

    auto done = completed_record(token, R"({"id":"ord_1","status":"created"})");
    auto complete_bytes = sent([&] { REQUIRE_FALSE(f.complete("", "k", done, 3600s)); });
    // No owner prefix (the script reads the token from the record) and no empty publish command.
    CHECK(complete_bytes == resp_size({"EVALSHA", std::string(store::detail::complete_lua().sha), "1",
                                       key_of("", "k"), store::encode_record(done), "3600000"}));
    MESSAGE("reserve " << reserve_bytes << " bytes, complete " << complete_bytes << " bytes");

    auto replay = f.reserve("", "k", in_flight_record("fedcba9876543210fedcba9876543210"));
    REQUIRE(replay.existing);
    CHECK(*replay.existing == done);
    auto pttl = resp_integer(redis.command({"PTTL", key_of("", "k")}));
    CHECK(pttl > 3590000);
    CHECK(pttl <= 3600000);
}

TEST_CASE("complete finds the owner in the record: packed, unpacked and long tokens, one byte off")
{
    redis_server redis;
    store_fixture f(redis_config_for(redis.port()));
    const std::string long_hex(200, 'a');               // 100 packed bytes: a two-byte length
    const std::string long_raw = std::string(150, 'x'); // unpacked, a two-byte length
    std::vector<std::pair<std::string, std::vector<std::string>>> cases{
        {"0123456789abcdef0123456789abcdef",
         {"0123456789abcdef0123456789abcdee", "0123456789abcdef", "0123456789abcdef0123456789abcdef00",
          "0123456789ABCDEF0123456789ABCDEF"}},
        {"owner-a", {"owner-b", "owner-a2", "owner", "6f776e65722d61"}},
        {long_hex, {std::string(198, 'a') + "ab", long_hex + "aa", std::string(198, 'a')}},
        {long_raw, {std::string(149, 'x') + "y", long_raw + "x", std::string(149, 'x')}},
        {"", {"a", "00"}}};
    int n = 0;
    for (const auto& [owner, others] : cases) {
        std::string key = "k"; // += : GCC 12 warns falsely on "..." + std::to_string(...)
        key += std::to_string(n++);
        INFO("owner " << owner);
        REQUIRE(f.reserve("", key, in_flight_record(owner)).acquired);
        for (const auto& other : others) {
            INFO("other " << other);
            CHECK(f.complete("", key, completed_record(other, "stolen")) == error::not_owner);
        }
        auto still = f.reserve("", key, in_flight_record("someone-else"));
        REQUIRE(still.existing);
        CHECK(still.existing->state == record_state::in_flight);
        CHECK(still.existing->owner_token == owner);
        auto done = completed_record(owner, "mine");
        CHECK_FALSE(f.complete("", key, done));
        auto after = f.reserve("", key, in_flight_record("someone-else"));
        REQUIRE(after.existing);
        CHECK(*after.existing == done);
        // A clear (version 1) record starts as its owner's in-flight one did: its owner may write
        // it again; nobody else may.
        CHECK_FALSE(f.complete("", key, completed_record(owner, "again")));
        CHECK(f.complete("", key, completed_record(others.front(), "stolen")) == error::not_owner);
    }
}

TEST_CASE("a sealed record completes over its owner's in-flight record and reads back")
{
    redis_server redis;
    store::record_protection protection;
    protection.cipher = store::record_cipher(std::string(32, '\x42'));
    store_fixture f(redis_config_for(redis.port()), true, {}, protection);
    const std::string token = "00112233445566778899aabbccddeeff";
    REQUIRE(f.reserve("", "k", in_flight_record(token)).acquired);
    CHECK(f.complete("", "k", completed_record("00112233445566778899aabbccddeefe", "x")) == error::not_owner);
    auto done = completed_record(token, R"({"card":"4111"})");
    REQUIRE_FALSE(f.complete("", "k", done));
    auto stored = redis.command({"GET", key_of("", "k")});
    CHECK(stored.find("4111") == std::string::npos); // sealed
    auto replay = f.reserve("", "k", in_flight_record("someone-else"));
    REQUIRE_FALSE(replay.ec);
    REQUIRE(replay.existing);
    CHECK(*replay.existing == done);
    // A sealed record starts with version 2, not its owner's in-flight version 1: not the owner's
    // lock any more, as before the script read the owner from the record.
    CHECK(f.complete("", "k", completed_record(token, "again")) == error::not_owner);
}
