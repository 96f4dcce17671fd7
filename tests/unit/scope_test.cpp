// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/gateway/decision.hpp>
#include <idemgate/gateway/scope.hpp>
#include <optional>
#include <string>
#include <vector>

using namespace idemgate::gateway;

namespace {

const std::string secret = "Jefe";
// A credential joins the scope as its HMAC-SHA256 under the secret, in lower-case hex: RFC 4231
// test case 2, HMAC-SHA256("Jefe", "what do ya want for nothing?").
constexpr std::string_view jefe_mac = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";

} // namespace

TEST_CASE("resolve_scope: the tenant, then a space and an HMAC (or '-') per credential")
{
    const std::string mac(jefe_mac);
    const std::optional<std::string> present = std::string("what do ya want for nothing?");
    const std::optional<std::string> absent;
    struct row {
        const char* name;
        std::string_view tenant;
        bool from_certificate;
        std::vector<std::optional<std::string>> credentials;
        std::string want_tenant;
        std::string want_principal;
    };
    const row table[] = {
        {"no tenant, no credentials", "", false, {}, "", ""},
        {"header tenant", "acme", false, {}, "acme", ""},
        {"certificate tenant", "Acme 100%", true, {}, certificate_scope_tenant("Acme 100%"), ""},
        {"one credential", "acme", false, {present}, "acme " + mac, mac},
        {"an absent credential is anonymous", "acme", false, {absent}, "acme -", "-"},
        {"the principal names every credential, absent ones as -",
         "",
         false,
         {absent, present},
         " - " + mac,
         "-," + mac},
        {"certificate tenant and credentials",
         "a b",
         true,
         {present, absent},
         certificate_scope_tenant("a b") + " " + mac + " -",
         mac + ",-"},
    };
    for (const auto& r : table) {
        CAPTURE(r.name);
        scope_source source;
        source.tenant = r.tenant;
        source.tenant_from_certificate = r.from_certificate;
        source.credentials = r.credentials;
        auto resolved = resolve_scope(source, secret);
        CHECK(resolved.tenant == r.want_tenant);
        CHECK(resolved.principal == r.want_principal);
        // The admin API's principal= names the same scope without the raw credentials.
        scope_source by_principal;
        by_principal.tenant = r.tenant;
        by_principal.tenant_from_certificate = r.from_certificate;
        CHECK(set_scope_parameter(by_principal, "principal", resolved.principal));
        CHECK(resolve_scope(by_principal, "another secret").tenant == r.want_tenant);
    }
}

TEST_CASE("is_principal: what the access log writes, nothing that could leave the credential part")
{
    const std::string mac(64, 'a');
    CHECK(is_principal(mac));
    CHECK(is_principal("-"));
    CHECK(is_principal("-," + mac + ",-"));
    CHECK_FALSE(is_principal(""));
    CHECK_FALSE(is_principal(mac.substr(0, 16)));
    CHECK_FALSE(is_principal(std::string(64, 'A')));
    CHECK_FALSE(is_principal(mac + " x"));
    CHECK_FALSE(is_principal(mac + ","));
    CHECK_FALSE(is_principal("-,\x02/r/"));
    CHECK_FALSE(is_principal("anonymous"));
    // An invalid principal adds nothing to the scope.
    scope_source source;
    source.tenant = "acme";
    source.principal = "x y";
    CHECK(resolve_scope(source, "s").tenant == "acme");
}

TEST_CASE("set_scope_parameter: the admin API's names build the scope the filter resolves")
{
    scope_source source;
    CHECK(set_scope_parameter(source, "tenant", "acme"));
    CHECK(set_scope_parameter(source, "credential", "what do ya want for nothing?"));
    CHECK(set_scope_parameter(source, "credential", ""));
    CHECK_FALSE(set_scope_parameter(source, "key", "k1"));
    CHECK_FALSE(set_scope_parameter(source, "other", "x"));
    CHECK(resolve_scope(source, secret).tenant == "acme " + std::string(jefe_mac) + " -");

    // The last tenant parameter wins; cert_tenant names a certificate's common name.
    CHECK(set_scope_parameter(source, "cert_tenant", "Acme Corp"));
    source.credentials.clear();
    CHECK(resolve_scope(source, secret).tenant == certificate_scope_tenant("Acme Corp"));
    CHECK(set_scope_parameter(source, "tenant", "acme"));
    CHECK(resolve_scope(source, secret).tenant == "acme");
}
