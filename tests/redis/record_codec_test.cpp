// SPDX-License-Identifier: Apache-2.0
// The Redis record encoding: any bytes round-trip; broken input is record_corrupt, never a crash.
#include <doctest/doctest.h>
#include <idemgate/common/error.hpp>
#include <idemgate/store/record_codec.hpp>
#include <idemgate/store/redis_store.hpp>
#include <random>
#include <set>

using namespace idemgate;
using namespace idemgate::store;

namespace {

std::string random_bytes(std::mt19937& rng, std::size_t max_len)
{
    std::uniform_int_distribution<std::size_t> len(0, max_len);
    std::uniform_int_distribution<int> byte(0, 255);
    std::string s(len(rng), '\0');
    for (auto& c : s)
        c = static_cast<char>(byte(rng));
    return s;
}

record random_completed(std::mt19937& rng)
{
    record r;
    r.state = record_state::completed;
    r.fingerprint = random_bytes(rng, 80);
    r.owner_token = random_bytes(rng, 40);
    r.created_unix_ms = static_cast<std::int64_t>(rng()) << 20 | rng();
    r.response.status = rng() % 600;
    r.response.reason = random_bytes(rng, 20);
    auto n = rng() % 6;
    for (unsigned i = 0; i < n; ++i)
        r.response.headers.push_back({random_bytes(rng, 30), random_bytes(rng, 300)});
    r.response.body = random_bytes(rng, 5000);
    return r;
}

record sample_completed()
{
    record r;
    r.state = record_state::completed;
    r.fingerprint = std::string(64, 'a');
    r.fingerprint[3] = '7';
    r.owner_token = "0123456789abcdef0123456789abcdef";
    r.created_unix_ms = 1764400000000;
    r.response.status = 201;
    r.response.reason = "Created";
    r.response.headers = {{"content-type", "application/json"}, {"x-bin", std::string("\0\r\n\xff", 4)}};
    r.response.body = R"({"id":1})";
    return r;
}

record decoded(const std::string& bytes)
{
    record out;
    auto ec = decode_record(bytes, out);
    REQUIRE_MESSAGE(!ec, ec.message());
    return out;
}

} // namespace

TEST_CASE("random completed records round-trip byte for byte")
{
    std::mt19937 rng(12345);
    for (int i = 0; i < 500; ++i) {
        auto r = random_completed(rng);
        CHECK(decoded(encode_record(r)) == r);
    }
}

TEST_CASE("an in-flight record round-trips and carries no response")
{
    record r;
    r.state = record_state::in_flight;
    r.fingerprint = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    r.owner_token = "tok";
    r.created_unix_ms = 42;
    auto bytes = encode_record(r);
    CHECK(decoded(bytes) == r);
    // version + token + state + created + packed fingerprint: small by design.
    CHECK(bytes.size() <= 1 + 1 + 3 + 1 + 1 + 1 + 32);
    r.owner_token = "0123456789abcdef0123456789abcdef"; // the gateway's tokens pack to 16 bytes
    CHECK(encode_record(r).size() <= 1 + 1 + 16 + 1 + 1 + 1 + 32);
}

TEST_CASE("status-only records and tombstones round-trip with the body's length and SHA-256, sealed too")
{
    for (auto state : {record_state::status_only, record_state::tombstone}) {
        auto r = sample_completed();
        r.state = state;
        r.response.body.clear();
        r.body_length = 9 * 1024 * 1024;
        r.body_sha256 = std::string(64, 'c');
        auto bytes = encode_record(r);
        CHECK(decoded(bytes) == r);
        r.body_sha256.clear(); // not read to its end
        CHECK(decoded(encode_record(r)) == r);
        // Trailing or missing bytes are record_corrupt.
        record broken;
        CHECK(decode_record(bytes + "x", broken) == error::record_corrupt);
        CHECK(decode_record(bytes.substr(0, bytes.size() - 1), broken) == error::record_corrupt);
    }
    record_cipher cipher(std::string(32, 'k'));
    auto r = sample_completed();
    r.state = record_state::tombstone;
    r.response.body.clear();
    r.body_sha256 = std::string(64, 'd');
    std::string sealed;
    REQUIRE(!encode_record(r, sealed, cipher, "key:t"));
    CHECK(static_cast<unsigned char>(sealed[0]) == record_codec_version_sealed);
    record opened;
    REQUIRE(!decode_record(sealed, opened, cipher, "key:t"));
    CHECK(opened == r);
}

TEST_CASE("empty body, empty headers and binary headers round-trip")
{
    auto r = sample_completed();
    r.response.body.clear();
    CHECK(decoded(encode_record(r)) == r);
    r.response.headers.clear();
    CHECK(decoded(encode_record(r)) == r);
    r = sample_completed();
    r.response.headers.push_back({std::string("\0", 1), std::string(70000, '\x80')});
    CHECK(decoded(encode_record(r)) == r);
}

TEST_CASE("a hex fingerprint is packed and an upper-case or odd one is kept as is")
{
    auto r = sample_completed();
    auto packed = encode_record(r).size();
    r.fingerprint = std::string(64, 'A');
    auto raw = encode_record(r);
    CHECK(raw.size() > packed);
    CHECK(decoded(raw) == r);
    r.fingerprint = std::string(63, 'a');
    CHECK(decoded(encode_record(r)) == r);
}

TEST_CASE(
    "every byte value at every place of a fingerprint or token: packed exactly when it is lower-case hex")
{
    auto base = sample_completed();
    base.fingerprint.clear();
    for (int i = 0; i < 4; ++i)
        base.fingerprint += "0123456789abcdef";
    base.owner_token = base.fingerprint.substr(7, 38); // sixteen digits at a time, then six a pair at a time
    const auto packed_size = encode_record(base).size();
    auto lower_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); };
    std::size_t checked = 0;
    std::string first_mismatch;
    for (std::string record::*field : {&record::fingerprint, &record::owner_token}) {
        const auto length = (base.*field).size();
        for (std::size_t at = 0; at < length; ++at)
            for (int value = 0; value < 256; ++value, ++checked) {
                auto r = base;
                (r.*field)[at] = static_cast<char>(value);
                const auto bytes = encode_record(r);
                const bool packed = bytes.size() == packed_size;
                record back;
                const bool same = !decode_record(bytes, back) && back == r;
                if (first_mismatch.empty() && (packed != lower_hex(static_cast<char>(value)) || !same))
                    first_mismatch =
                        std::string(field == &record::fingerprint ? "fingerprint" : "owner token") +
                        " byte " + std::to_string(at) + " = " + std::to_string(value) +
                        (same ? "" : ": does not round-trip");
            }
    }
    CHECK(checked == 256 * (64 + 38));
    CHECK_MESSAGE(first_mismatch.empty(), first_mismatch);
}

TEST_CASE("tokens, reasons and header names round-trip in every spelling")
{
    auto r = sample_completed();
    for (const std::string& token : std::vector<std::string>{"", "0", "00", "abcdef", "ABCDEF", "abcdeg",
                                                             std::string(300, 'a'), std::string("\0a", 2)}) {
        r.owner_token = token;
        CHECK(decoded(encode_record(r)) == r);
        CHECK(encode_record(r).starts_with(owner_prefix(token)));
    }
    for (std::string reason : {"Created", "created", "", "Whatever", "OK"}) {
        r.response.reason = reason;
        CHECK(decoded(encode_record(r)) == r);
    }
    for (unsigned status : {0u, 99u, 200u, 299u, 599u, 1000u, 4000000000u}) {
        r.response.status = status;
        r.response.reason = "";
        CHECK(decoded(encode_record(r)) == r);
        r.response.reason = "OK";
        CHECK(decoded(encode_record(r)) == r);
    }
    r.response.headers = {{"Content-Type", "a"},
                          {"content-type", "b"},
                          {"CONTENT-TYPE", "c"},
                          {"x-correlation-id", "d"},
                          {"", ""},
                          {"Date", "Sun, 29 Nov 2026 12:00:00 GMT"}};
    CHECK(decoded(encode_record(r)) == r);
}

TEST_CASE("a header name index beyond the table and a dropped unknown reason are record_corrupt")
{
    record out;
    auto r = sample_completed();
    r.response.reason = "Created";
    r.response.headers = {{"Content-Type", "v"}};
    r.response.body = "";
    auto bytes = encode_record(r);
    // ... | varint count=1 | name index (1 byte) | value len 1 | 'v' | body len 0
    auto name_pos = bytes.size() - 4;
    REQUIRE(bytes[name_pos] == '\x01'); // index 0, tagged
    bytes[name_pos] = '\x7f';           // index 63: beyond the table
    CHECK(decode_record(bytes, out) == error::record_corrupt);

    r.response.status = 299; // no standard phrase: the reason must be stored
    r.response.reason = "Whatever";
    CHECK(decoded(encode_record(r)) == r);
}

TEST_CASE("negative and extreme timestamps round-trip")
{
    auto r = sample_completed();
    for (std::int64_t t : {std::int64_t{-1}, std::numeric_limits<std::int64_t>::min(),
                           std::numeric_limits<std::int64_t>::max(), std::int64_t{0}}) {
        r.created_unix_ms = t;
        CHECK(decoded(encode_record(r)) == r);
    }
}

TEST_CASE("completed record overhead beyond the response bytes is small")
{
    auto r = sample_completed();
    std::size_t response_bytes = r.response.reason.size() + r.response.body.size();
    for (const auto& h : r.response.headers)
        response_bytes += h.name.size() + h.value.size();
    auto overhead = encode_record(r).size() - response_bytes;
    // Fixed part ~60 bytes (packed token 16, packed fingerprint 32) + two bytes per header;
    // "Created" and "content-type" are not stored at all.
    CHECK(overhead <= 60 + 2 * r.response.headers.size());
}

TEST_CASE("the owner prefix starts every encoding of a record with that token")
{
    auto r = sample_completed();
    auto prefix = owner_prefix(r.owner_token);
    CHECK(encode_record(r).starts_with(prefix));
    r.state = record_state::in_flight;
    r.response = {};
    CHECK(encode_record(r).starts_with(prefix));
    // A token that extends another is not mistaken for it (the length is in the prefix).
    CHECK_FALSE(encode_record(r).starts_with(owner_prefix(r.owner_token.substr(0, 10))));
    CHECK_FALSE(owner_prefix(r.owner_token + "x").starts_with(prefix));
}

TEST_CASE("every truncation of a valid encoding is record_corrupt")
{
    auto bytes = encode_record(sample_completed());
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        record out;
        CHECK(decode_record(std::string_view(bytes).substr(0, n), out) == error::record_corrupt);
    }
}

TEST_CASE("trailing bytes, unknown versions and unknown states are record_corrupt")
{
    record out;
    auto bytes = encode_record(sample_completed());
    CHECK(decode_record(bytes + "x", out) == error::record_corrupt);

    auto other_version = bytes;
    other_version[0] = 2;
    CHECK(decode_record(other_version, out) == error::record_corrupt);
    other_version[0] = 0;
    CHECK(decode_record(other_version, out) == error::record_corrupt);

    auto state_pos = owner_prefix(sample_completed().owner_token).size();
    auto bad_state = bytes;
    bad_state[state_pos] = 9;
    CHECK(decode_record(bad_state, out) == error::record_corrupt);

    CHECK(decode_record("", out) == error::record_corrupt);
    CHECK(decode_record("plain text that is not a record", out) == error::record_corrupt);
}

TEST_CASE("huge lengths and overlong varints are record_corrupt without allocating")
{
    record out;
    // version 1, token length = 2^63 (varint), nothing else.
    std::string huge("\x01\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10);
    CHECK(decode_record(huge, out) == error::record_corrupt);
    std::string overlong("\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12);
    CHECK(decode_record(overlong, out) == error::record_corrupt);

    // A header count far beyond the remaining bytes.
    record r = sample_completed();
    r.response.headers.clear();
    r.response.body.clear();
    auto bytes = encode_record(r);
    // The header count is the byte before the body length (two single-byte varints at the end).
    bytes[bytes.size() - 2] = '\x7f';
    CHECK(decode_record(bytes, out) == error::record_corrupt);
}

TEST_CASE("random garbage never crashes the decoder and leaves the output untouched on failure")
{
    std::mt19937 rng(777);
    auto valid = encode_record(sample_completed());
    int corrupt = 0;
    for (int i = 0; i < 20000; ++i) {
        std::string input;
        if (i % 2 == 0) {
            input = random_bytes(rng, 64);
        } else {
            input = valid;
            auto flips = 1 + rng() % 3;
            for (unsigned f = 0; f < flips; ++f)
                input[rng() % input.size()] = static_cast<char>(rng());
        }
        record out;
        out.owner_token = "untouched";
        auto ec = decode_record(input, out);
        if (ec) {
            CHECK(ec == error::record_corrupt);
            CHECK(out.owner_token == "untouched");
            ++corrupt;
        } else {
            // Whatever decoded must encode back to the same bytes or be a packed/raw alias.
            CHECK(decode_record(encode_record(out), out) == boost::system::error_code{});
        }
    }
    CHECK(corrupt > 10000);
}

TEST_CASE("redis keys of different scopes never collide")
{
    CHECK(redis_key("p", {"a:b", "c"}) != redis_key("p", {"a", "b:c"}));
    CHECK(redis_key("p", {"a:b", "c"}) == "p:a%3Ab:c");
    CHECK(redis_key("p", {"", "k"}) == "p::k");
    CHECK(redis_key("p", {"%3A", ""}) != redis_key("p", {":", ""}));
    CHECK(redis_key("p", {"t", std::string("\n \x7f\xff", 4)}) == "p:t:%0A%20%7F%FF");

    // Exhaustive over a small alphabet of the dangerous bytes: the map is injective.
    const std::string alphabet{':', '%', 'a', '3', 'A', '\0'};
    std::vector<std::string> parts{""};
    for (int len = 1; len <= 3; ++len) {
        std::vector<std::string> next;
        for (const auto& p : parts)
            if (p.size() == static_cast<std::size_t>(len - 1))
                for (char c : alphabet)
                    next.push_back(p + c);
        parts.insert(parts.end(), next.begin(), next.end());
    }
    std::set<std::string> keys;
    std::size_t pairs = 0;
    for (const auto& t : parts)
        for (const auto& k : parts) {
            keys.insert(redis_key("idemgate", {t, k}));
            ++pairs;
        }
    CHECK(keys.size() == pairs);
}
