// SPDX-License-Identifier: Apache-2.0
// The digest and hex helpers against published test vectors (FIPS 180-2, RFC 4231).
#include <cstdio>
#include <cstring>
#include <doctest/doctest.h>
#include <idemgate/common/digest.hpp>

TEST_CASE("sha256_hex and hmac_sha256_hex match published vectors")
{
    CHECK(idemgate::sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CHECK(idemgate::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    // RFC 4231, test case 2.
    CHECK(idemgate::hmac_sha256_hex("Jefe", "what do ya want for nothing?") ==
          "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // An empty key is a key (RFC 2104 pads it): a stable, distinct value.
    CHECK(idemgate::hmac_sha256_hex("", "x").size() == 64);
    CHECK(idemgate::hmac_sha256_hex("", "x") != idemgate::hmac_sha256_hex("k", "x"));
}

TEST_CASE("hex encoders")
{
    CHECK(idemgate::to_hex(std::string_view("\x00\x0f\xf0\xff", 4)) == "000ff0ff");
    std::string out = "id:";
    idemgate::append_hex_bits(out, 0x0123456789abcdefULL);
    CHECK(out == "id:fedcba9876543210"); // least significant digit first
    out = "t:";
    idemgate::append_hex_words(out, 0x0123456789abcdefULL, 0xfedcba9876543210ULL);
    std::string bytes(16, '\0');
    const std::uint64_t words[2] = {0x0123456789abcdefULL, 0xfedcba9876543210ULL};
    std::memcpy(bytes.data(), words, 16);
    CHECK(out == "t:" + idemgate::to_hex(bytes)); // the words' bytes in memory order
    CHECK(out.size() == 2 + 32);
}

TEST_CASE("to_hex of every byte value at every place, for lengths around the sixteen-byte steps")
{
    auto reference = [](std::string_view bytes) {
        std::string hex;
        for (unsigned char c : bytes) {
            char two[3];
            std::snprintf(two, sizeof two, "%02x", c);
            hex += two;
        }
        return hex;
    };
    std::size_t checked = 0;
    std::string first_mismatch;
    for (std::size_t length : {1u, 15u, 16u, 17u, 31u, 32u, 33u, 48u}) {
        std::string bytes(length, '\x5a');
        for (std::size_t at = 0; at < length; ++at)
            for (int value = 0; value < 256; ++value, ++checked) {
                bytes[at] = static_cast<char>(value);
                if (first_mismatch.empty() && idemgate::to_hex(bytes) != reference(bytes))
                    first_mismatch = "length " + std::to_string(length) + ", byte " + std::to_string(at) +
                                     " = " + std::to_string(value);
            }
    }
    CHECK(checked == 256 * 193);
    CHECK_MESSAGE(first_mismatch.empty(), first_mismatch);
}
