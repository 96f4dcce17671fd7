// SPDX-License-Identifier: Apache-2.0
// The digest and hex helpers against published test vectors (FIPS 180-2, RFC 4231).
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
}
