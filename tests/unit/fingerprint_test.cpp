#include <doctest/doctest.h>
#include <idemgate/gateway/fingerprint.hpp>

using idemgate::gateway::fingerprint;

TEST_CASE("fingerprint is SHA-256 of method, target and body joined by newlines")
{
    // sha256("POST\n/api/v1/orders\n{\"a\":1}") computed independently with sha256sum.
    CHECK(fingerprint("POST", "/api/v1/orders", "{\"a\":1}") ==
          "d00ada8794e63f156c9a23e546ec5ededbb1c3cec408b64d23ef42fa4633bf81");
}

TEST_CASE("fingerprint separates method, target, query and body")
{
    auto base = fingerprint("POST", "/a", "x");
    CHECK(base.size() == 64);
    CHECK(fingerprint("POST", "/a", "x") == base);
    CHECK(fingerprint("PATCH", "/a", "x") != base);
    CHECK(fingerprint("POST", "/a?x", "") != fingerprint("POST", "/a", "x"));
    CHECK(fingerprint("POST", "/a?q=1", "x") != base);
    CHECK(fingerprint("POST", "/a", "x ") != base);
    CHECK(fingerprint("POST", "/a", "") != fingerprint("POST", "/a", std::string_view("\0", 1)));
}
