// SPDX-License-Identifier: Apache-2.0
// tracing: the OpenTelemetry SDK environment variables under the file's keys (the file wins,
// then the variable, then the default), an https:// endpoint and its TLS keys.
#include "config_test_support.hpp"

#include <map>

using namespace config_test;

namespace {

std::map<std::string, std::string>& environment()
{
    static std::map<std::string, std::string> values;
    return values;
}

const char* test_env(const char* name)
{
    auto it = environment().find(name);
    return it == environment().end() ? nullptr : it->second.c_str();
}

cfg::tracing_config tracing_with(const std::string& tracing_yaml, std::map<std::string, std::string> env)
{
    environment() = std::move(env);
    return cfg::parse(minimal + tracing_yaml, test_env).tracing;
}

std::vector<std::string> problems_with(const std::string& tracing_yaml,
                                       std::map<std::string, std::string> env)
{
    environment() = std::move(env);
    return problems_of(minimal + tracing_yaml, test_env);
}

} // namespace

TEST_CASE(
    "OTEL_EXPORTER_OTLP_ENDPOINT is a base URL: the traces path is appended; the per-signal one is used "
    "as it is")
{
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"}}).otlp_endpoint ==
          "http://collector:4318/v1/traces");
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318/otlp/"}}).otlp_endpoint ==
          "https://collector:4318/otlp/v1/traces");
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318"},
                            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom"}})
              .otlp_endpoint == "http://b:4318/custom");
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_ENDPOINT", ""}}).otlp_endpoint.empty()); // empty is unset
    // The file's key wins, even an empty one (tracing off).
    CHECK(tracing_with("tracing:\n  otlp_endpoint: http://file:4318/v1/traces\n",
                       {{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://env:4318/v1/traces"}})
              .otlp_endpoint == "http://file:4318/v1/traces");
    CHECK(tracing_with("tracing:\n  otlp_endpoint: \"\"\n",
                       {{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318"}})
              .otlp_endpoint.empty());
    auto bad = problems_with("", {{"OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"}});
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].find("tracing.otlp_endpoint: from the environment variable OTEL_EXPORTER_OTLP_ENDPOINT") ==
          0);
}

TEST_CASE("an https:// endpoint turns TLS on with the client TLS keys; http:// with TLS is refused")
{
    const std::string ca = IDEMGATE_SOURCE_DIR "/LICENSE"; // readable; OpenSSL loads it later
    auto t =
        tracing_with("tracing:\n  otlp_endpoint: https://collector:4318/v1/traces\n  tls:\n    ca_file: \"" +
                         ca + "\"\n    server_name: collector.internal\n",
                     {});
    CHECK(t.tls.enabled);
    CHECK(t.tls.verify);
    CHECK(t.tls.ca_file == ca);
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://c:4318"}}).tls.enabled);
    CHECK_FALSE(tracing_with("tracing:\n  otlp_endpoint: http://c:4318/v1/traces\n", {}).tls.enabled);
    auto plain =
        problems_with("tracing:\n  otlp_endpoint: http://c:4318/v1/traces\n  tls:\n    enabled: true\n", {});
    REQUIRE(plain.size() == 1);
    CHECK(plain[0].find("tracing.tls.enabled: true while the OTLP endpoint is an http:// URL") == 0);
    auto off = problems_with(
        "tracing:\n  otlp_endpoint: https://c:4318/v1/traces\n  tls:\n    enabled: false\n", {});
    REQUIRE(off.size() == 1);
    CHECK(off[0].find("tracing.tls.enabled: false while the OTLP endpoint is an https:// URL") == 0);
}

TEST_CASE("service.name: the file, then OTEL_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES, then idemgate")
{
    CHECK(tracing_with("", {}).service_name == "idemgate");
    CHECK(tracing_with("", {{"OTEL_RESOURCE_ATTRIBUTES", "service.name=attr"}}).service_name == "attr");
    CHECK(tracing_with("", {{"OTEL_RESOURCE_ATTRIBUTES", "service.name=attr"}, {"OTEL_SERVICE_NAME", "env"}})
              .service_name == "env");
    CHECK(tracing_with("tracing:\n  service_name: idemgate\n",
                       {{"OTEL_RESOURCE_ATTRIBUTES", "service.name=attr"}, {"OTEL_SERVICE_NAME", "env"}})
              .service_name == "idemgate");
}

TEST_CASE(
    "OTEL_RESOURCE_ATTRIBUTES: percent-decoded pairs; a malformed value is not used and is warned about")
{
    auto t = tracing_with("", {{"OTEL_RESOURCE_ATTRIBUTES",
                                " k8s.pod.name = edge-1 ,note=a%3Db%2Cc%20d,service.version=9,empty="}});
    using pairs = std::vector<std::pair<std::string, std::string>>;
    CHECK(t.resource_attributes == pairs{{"k8s.pod.name", "edge-1"}, {"note", "a=b,c d"}, {"empty", ""}});
    CHECK(t.environment_warnings.empty());
    for (const char* bad : {"a=1,novalue", "a=1,=2", "a=%zz", "a=%ff"}) {
        auto b = tracing_with("", {{"OTEL_RESOURCE_ATTRIBUTES", bad}});
        CHECK_MESSAGE(b.resource_attributes.empty(), bad);
        REQUIRE(b.environment_warnings.size() == 1);
        CHECK(b.environment_warnings[0].find("OTEL_RESOURCE_ATTRIBUTES: entry ") == 0);
    }
}

TEST_CASE("OTEL_EXPORTER_OTLP_HEADERS, OTEL_SDK_DISABLED and the protocol")
{
    using pairs = std::vector<std::pair<std::string, std::string>>;
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_HEADERS", "api-key=a%20b,x-tenant=t1"}}).headers ==
          pairs{{"api-key", "a b"}, {"x-tenant", "t1"}});
    CHECK(tracing_with("",
                       {{"OTEL_EXPORTER_OTLP_HEADERS", "a=1"}, {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "b=2"}})
              .headers == pairs{{"b", "2"}});
    auto bad = problems_with("", {{"OTEL_EXPORTER_OTLP_HEADERS", "no-equals"}});
    REQUIRE(bad.size() == 1);
    CHECK(bad[0].find("the environment variable OTEL_EXPORTER_OTLP_HEADERS is not Name=value") !=
          std::string::npos);

    auto off =
        tracing_with("tracing:\n  otlp_endpoint: http://c:4318/v1/traces\n", {{"OTEL_SDK_DISABLED", "True"}});
    CHECK_FALSE(off.enabled());
    CHECK(off.environment_warnings.size() == 1);
    CHECK(
        tracing_with("tracing:\n  otlp_endpoint: http://c:4318/v1/traces\n", {{"OTEL_SDK_DISABLED", "false"}})
            .enabled());
    auto odd =
        tracing_with("tracing:\n  otlp_endpoint: http://c:4318/v1/traces\n", {{"OTEL_SDK_DISABLED", "1"}});
    CHECK(odd.enabled());
    CHECK(odd.environment_warnings.size() == 1);
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}}).environment_warnings.size() == 1);
    CHECK(tracing_with("", {{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"}}).environment_warnings.empty());
}
