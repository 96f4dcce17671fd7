// SPDX-License-Identifier: Apache-2.0
// Records at rest: the sealed codec version round-trips, every altered byte, a wrong
// key or a record moved to another Redis key is record_corrupt, the previous key still opens old
// records; and hashed Redis keys hold neither the key nor the tenant.
#include "idemgate/test/secrets.hpp"
#include "redis_test_support.hpp"

#include <doctest/doctest.h>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_cipher.hpp>
#include <idemgate/store/record_codec.hpp>
#include <idemgate/store/redis_store.hpp>
#include <set>
#include <stdexcept>

using namespace idemgate;
using namespace idemgate::store;
using idemgate::test::completed_record;
using idemgate::test::in_flight_record;

using idemgate::test::card;
using idemgate::test::key_a;
using idemgate::test::key_b;

namespace {

const std::string binding = "idemgate:acme:order-1"; // the Redis key a record is stored under

record card_record()
{
    auto r = completed_record("0123456789abcdef0123456789abcdef", "{\"card\":\"" + card + "\"}");
    r.response.headers.push_back({"X-Account", "alice@example.com"});
    return r;
}

std::string sealed(const record& r, const record_cipher& cipher, const std::string& where = binding)
{
    std::string out;
    REQUIRE_FALSE(encode_record(r, out, cipher, where));
    return out;
}

seal_fault fault_of(const std::string& bytes, const record_cipher& cipher, const std::string& where = binding)
{
    record out;
    seal_fault fault = seal_fault::none;
    CHECK(decode_record(bytes, out, cipher, where, &fault) == error::record_corrupt);
    return fault;
}

} // namespace

TEST_SUITE("record encryption")
{

    TEST_CASE("a sealed record round-trips and holds no response byte in clear")
    {
        record_cipher cipher(key_a);
        auto r = card_record();
        auto bytes = sealed(r, cipher);
        CHECK(static_cast<unsigned char>(bytes[0]) == record_codec_version_sealed);
        CHECK(bytes.find(card) == std::string::npos);
        CHECK(bytes.find("alice@example.com") == std::string::npos);
        CHECK(bytes.find("application/json") == std::string::npos);
        // The owner token right after the version byte, as complete/release compare it.
        auto prefix = owner_prefix(r.owner_token);
        CHECK(bytes.substr(1, prefix.size() - 1) == prefix.substr(1));

        record out;
        REQUIRE_FALSE(decode_record(bytes, out, cipher, binding));
        CHECK(out == r);
        // A random nonce per record: the same record never seals to the same bytes.
        CHECK(sealed(r, cipher) != bytes);
        // 4-byte key id, 12-byte nonce and 16-byte tag over the clear encoding.
        CHECK(bytes.size() == encode_record(r).size() + record_cipher::overhead);
    }

    TEST_CASE("records without a response stay version 1, so the owner prefix still matches them")
    {
        record_cipher cipher(key_a);
        for (auto r : {in_flight_record("0123456789abcdef0123456789abcdef"), card_record()}) {
            if (r.state == record_state::completed)
                r.state = record_state::outcome_unknown;
            r.response = {};
            auto bytes = sealed(r, cipher);
            CHECK(bytes == encode_record(r));
            CHECK(bytes.starts_with(owner_prefix(r.owner_token)));
        }
    }

    TEST_CASE("every altered byte of a sealed record, clear head included, is record_corrupt")
    {
        record_cipher cipher(key_a);
        auto bytes = sealed(card_record(), cipher);
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            for (unsigned char flip : {0x01, 0x80}) {
                auto altered = bytes;
                altered[i] = static_cast<char>(altered[i] ^ flip);
                record out;
                INFO("byte " << i << " flipped with " << int(flip));
                CHECK(decode_record(altered, out, cipher, binding) == error::record_corrupt);
                CHECK(out == record{});
            }
        }
        // Truncated or extended.
        CHECK(fault_of(bytes.substr(0, bytes.size() - 1), cipher) == seal_fault::not_authentic);
        CHECK(fault_of(bytes + "x", cipher) == seal_fault::not_authentic);
    }

    TEST_CASE(
        "the owner token and fingerprint are authenticated: a ciphertext moved into another record fails")
    {
        record_cipher cipher(key_a);
        auto r = card_record();
        auto bytes = sealed(r, cipher);
        auto other = r;
        other.owner_token = "fedcba9876543210fedcba9876543210";
        other.fingerprint = test::fingerprint_of("other");
        auto other_bytes = sealed(other, cipher);
        // Same head length (token and fingerprint are packed to fixed sizes): graft r's sealed part
        // onto the other record's head.
        auto clear_head_size = [](const record& rec) {
            record bare = rec;
            bare.state = record_state::outcome_unknown; // same head, no response part
            bare.response = {};
            return encode_record(bare).size();
        };
        REQUIRE(clear_head_size(r) == clear_head_size(other));
        auto grafted = other_bytes.substr(0, clear_head_size(other)) + bytes.substr(clear_head_size(r));
        CHECK(fault_of(grafted, cipher) == seal_fault::not_authentic);
        // And the untouched original still opens.
        record out;
        CHECK_FALSE(decode_record(bytes, out, cipher, binding));
    }

    TEST_CASE("a record copied under another Redis key does not open")
    {
        record_cipher cipher(key_a);
        auto bytes = sealed(card_record(), cipher, "idemgate:acme:order-1");
        CHECK(fault_of(bytes, cipher, "idemgate:acme:order-2") == seal_fault::not_authentic); // same length
        CHECK(fault_of(bytes, cipher, "idemgate:mallory:order-1") == seal_fault::not_authentic);
        CHECK(fault_of(bytes, cipher, "") == seal_fault::not_authentic);
    }

    TEST_CASE("a wrong key is record_corrupt, never a wrong answer")
    {
        auto bytes = sealed(card_record(), record_cipher(key_a));
        CHECK(fault_of(bytes, record_cipher(key_b)) == seal_fault::unknown_key);
        // No cipher at all: the plain decoder refuses sealed records.
        record out;
        CHECK(decode_record(bytes, out) == error::record_corrupt);
        CHECK(fault_of(bytes, record_cipher{}) == seal_fault::unknown_key);

        // A key id rewritten to name another known key: authentication fails under that key.
        record_cipher both(key_a, key_b);
        auto id_b = record_cipher::key_id(key_b);
        // The sealed part starts with the key id, right after the clear head.
        auto id_a = record_cipher::key_id(key_a);
        auto pos = bytes.find(std::string(id_a.begin(), id_a.end()));
        REQUIRE(pos != std::string::npos);
        auto renamed = bytes;
        std::copy(id_b.begin(), id_b.end(), renamed.begin() + static_cast<std::ptrdiff_t>(pos));
        CHECK(fault_of(renamed, both) == seal_fault::not_authentic);
    }

    TEST_CASE("rotation: the previous key still opens old records; new ones are sealed under the current key")
    {
        auto r = card_record();
        auto old_bytes = sealed(r, record_cipher(key_a));
        record_cipher rotated(key_b, key_a);
        record out;
        REQUIRE_FALSE(decode_record(old_bytes, out, rotated, binding));
        CHECK(out == r);

        auto new_bytes = sealed(r, rotated);
        auto id_b = record_cipher::key_id(key_b);
        CHECK(new_bytes.find(std::string(id_b.begin(), id_b.end())) != std::string::npos);
        CHECK(fault_of(new_bytes, record_cipher(key_a)) == seal_fault::unknown_key);
        CHECK_FALSE(decode_record(new_bytes, out, record_cipher(key_b), binding));

        // Only a previous key: nothing is sealed any more (turning encryption off), old records open.
        record_cipher retiring({}, key_a);
        CHECK_FALSE(retiring.seals());
        CHECK(sealed(r, retiring) == encode_record(r));
        CHECK_FALSE(decode_record(old_bytes, out, retiring, binding));
        CHECK(out == r);
    }

    TEST_CASE("version-1 records written before encryption was turned on are still served")
    {
        auto r = card_record();
        record out;
        CHECK_FALSE(decode_record(encode_record(r), out, record_cipher(key_a), binding));
        CHECK(out == r);
    }

    TEST_CASE("a sealed in-flight record is malformed: only responses are sealed")
    {
        auto bytes = encode_record(in_flight_record("0123456789abcdef0123456789abcdef"));
        bytes[0] = static_cast<char>(record_codec_version_sealed);
        CHECK(fault_of(bytes, record_cipher(key_a)) == seal_fault::malformed);
    }

    TEST_CASE("sealing needs a current key of 32 bytes")
    {
        CHECK_THROWS_AS(record_cipher(std::string(31, 'k')), std::invalid_argument);
        CHECK_THROWS_AS(record_cipher(key_a, std::string(33, 'k')), std::invalid_argument);
        CHECK_FALSE(record_cipher{}.seals());
        CHECK_FALSE(record_cipher{}.opens());
        std::string out = "kept";
        std::array<std::string_view, 1> aad{"x"};
        CHECK(record_cipher{}.seal("plaintext", aad, out) == error::record_seal_failed);
        CHECK(out == "kept");
        CHECK(record_cipher::key_id(key_a) != record_cipher::key_id(key_b));
    }

    TEST_CASE("the decorator's sealed records are the bytes the Redis store sealed itself, read either way")
    {
        // seal_record (the protection decorator) then encode_record (the backend) against
        // encode_record with the cipher (the Redis store of the previous release).
        auto r = card_record();
        record_cipher cipher(key_a);
        auto old_bytes = sealed(r, cipher);
        record stored;
        REQUIRE_FALSE(decode_stored_record(old_bytes, stored));
        CHECK(stored.response.body.empty());
        CHECK_FALSE(stored.sealed_response.empty());
        CHECK(encode_record(stored) == old_bytes); // the backend writes back what it read
        REQUIRE_FALSE(open_record(stored, cipher, binding));
        CHECK(stored == r);

        auto by_decorator = r;
        REQUIRE_FALSE(seal_record(by_decorator, cipher, binding));
        CHECK(by_decorator.response.body.empty());
        auto new_bytes = encode_record(by_decorator);
        CHECK(new_bytes[0] == '\x02');
        CHECK(new_bytes.size() == old_bytes.size());
        CHECK(new_bytes.substr(0, new_bytes.size() - by_decorator.sealed_response.size()) ==
              old_bytes.substr(0, new_bytes.size() - by_decorator.sealed_response.size())); // same head
        record opened;
        REQUIRE_FALSE(decode_record(new_bytes, opened, cipher, binding)); // the previous release reads it
        CHECK(opened == r);
        // Bound to the binding the decorator names: another record id does not open.
        auto moved = by_decorator;
        seal_fault fault = seal_fault::none;
        CHECK(open_record(moved, cipher, "idemgate:acme:order-2", &fault) == error::record_corrupt);
        CHECK(fault == seal_fault::not_authentic);
        CHECK(moved == by_decorator); // unchanged
        // A tombstone and a status-only record seal and open the same way.
        auto tomb = r;
        tomb.state = record_state::tombstone;
        tomb.response.body.clear();
        tomb.body_length = 42;
        tomb.body_sha256 = std::string(64, 'a');
        auto sealed_tomb = tomb;
        REQUIRE_FALSE(seal_record(sealed_tomb, cipher, binding + ":t"));
        CHECK(sealed_tomb.body_length == 0);
        REQUIRE_FALSE(decode_record(encode_record(sealed_tomb), opened, cipher, binding + ":t"));
        CHECK(opened == tomb);
    }

} // TEST_SUITE

TEST_SUITE("hashed redis keys")
{

    const std::string secret = "0123456789abcdef0123456789abcdef";

    TEST_CASE("a hashed key is <prefix>:{hex HMAC-SHA256(secret, tenant NUL key)}")
    {
        // openssl: printf 'acme\0order-1' | openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef
        CHECK(hashed_redis_key("idemgate", {"acme", "order-1"}, secret) ==
              "idemgate:{57af8b7684b9cf53aa1babad09e0528cb8b55878d0cf964c0d2e06094e45a9df}");
        auto key = hashed_redis_key("idemgate", {"acme", "order-1"}, secret);
        CHECK(key.find("acme") == std::string::npos);
        CHECK(key.find("order-1") == std::string::npos);
        // The NUL separates tenant and key: moving bytes between them gives another key.
        CHECK(hashed_redis_key("p", {"ab", "c"}, secret) != hashed_redis_key("p", {"a", "bc"}, secret));
        CHECK(hashed_redis_key("p", {"a:b", "c"}, secret) != hashed_redis_key("p", {"a", "b:c"}, secret));
        // Another secret, another key.
        CHECK(hashed_redis_key("p", {"a", "b"}, secret) !=
              hashed_redis_key("p", {"a", "b"}, "another secret of at least 32 bytes!"));
    }

    TEST_CASE("the tenant tag is the escaped tenant, or its HMAC under the hash secret")
    {
        CHECK(redis_tenant_tag("ac:me", "") == "ac%3Ame");
        // openssl: printf 'acme' | openssl dgst -sha256 -hmac 0123456789abcdef0123456789abcdef
        CHECK(redis_tenant_tag("acme", secret) ==
              "d8ad00265ff0a302d72247bcd296954337283c37fd952e4402787e655458b2ae");
        CHECK(redis_tenant_tag("acme", secret) != redis_tenant_tag("acme2", secret));
    }

} // TEST_SUITE
