// SPDX-License-Identifier: Apache-2.0
// tracing: the OpenTelemetry SDK environment variables (opentelemetry-specification,
// configuration/sdk-environment-variables.md and protocol/exporter.md) under the file's keys: a
// key the file writes wins, then the variable, then the default. An empty variable is unset.
#include "keys.hpp"

#include <boost/beast/core/string.hpp>
#include <cctype>
#include <idemgate/common/percent_coding.hpp>
#include <idemgate/common/text.hpp>
#include <string>

namespace idemgate::config::detail {

namespace {

const char* env_value(const loader& l, const std::string& name)
{
    const char* value = l.env(name);
    return value && *value ? value : nullptr;
}

// Whether `text` is well-formed UTF-8 (the JSON export body carries it as it is).
bool is_utf8(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();) {
        auto c = static_cast<unsigned char>(text[i]);
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xe ? 3 : (c >> 3) == 0x1e ? 4 : 0;
        if (n == 0 || i + n > text.size() || (n == 2 && c < 0xc2))
            return false;
        for (std::size_t j = 1; j < n; ++j)
            if ((static_cast<unsigned char>(text[i + j]) & 0xc0) != 0x80)
                return false;
        i += n;
    }
    return true;
}

// OTEL_RESOURCE_ATTRIBUTES: "key=value,key2=value2", keys and values percent-decoded. On any
// error the whole value is discarded and reported (the specification's resource/sdk.md), so a
// half-read variable never labels the spans.
void read_resource_attributes(const loader& l, tracing_config& t, bool name_given)
{
    const char* value = env_value(l, "OTEL_RESOURCE_ATTRIBUTES");
    if (!value)
        return;
    std::vector<std::pair<std::string, std::string>> out;
    std::string_view rest = value;
    for (std::size_t n = 1; !rest.empty(); ++n) {
        auto comma = rest.find(',');
        auto item = trim_ows(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        auto eq = item.find('=');
        std::string key, decoded;
        if (eq == std::string_view::npos || !percent_decode(trim_ows(item.substr(0, eq)), key) ||
            key.empty() || !percent_decode(trim_ows(item.substr(eq + 1)), decoded) || !is_utf8(key) ||
            !is_utf8(decoded)) {
            t.environment_warnings.push_back(
                "OTEL_RESOURCE_ATTRIBUTES: entry " + std::to_string(n) +
                " is not key=value (percent-encoded UTF-8); the variable is not used");
            return;
        }
        out.emplace_back(std::move(key), std::move(decoded));
    }
    for (auto& [key, attribute] : out) {
        // The file's service_name and OTEL_SERVICE_NAME come first; the build names its version.
        if (key == "service.name" && !name_given)
            t.service_name = attribute;
        if (key == "service.name" || key == "service.version")
            continue;
        t.resource_attributes.emplace_back(std::move(key), std::move(attribute));
    }
}

} // namespace

std::string otlp_url_problem(std::string_view url)
{
    if (url.empty())
        return {};
    auto authority = url.starts_with("http://")    ? url.substr(7)
                     : url.starts_with("https://") ? url.substr(8)
                                                   : std::string_view{};
    auto slash = authority.find('/');
    if (authority.empty() || slash == 0 ||
        !check_endpoint(authority.substr(0, slash == std::string_view::npos ? authority.size() : slash))
             .value)
        return quote(url) + " is not an http:// or https://host:port/path URL (OTLP/HTTP, e.g. "
                            "http://otel-collector:4318/v1/traces)";
    return {};
}

std::string header_list_problem(std::string_view text, bool percent_decoded,
                                std::vector<std::pair<std::string, std::string>>& out)
{
    std::string_view rest = text;
    while (!rest.empty()) {
        auto comma = rest.find(',');
        auto item = rest.substr(0, comma);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        auto eq = item.find('=');
        auto header = trim_ows(item.substr(0, eq));
        if (eq == std::string_view::npos || !is_token(header))
            return "is not Name=value,Name2=value2";
        std::string header_value(percent_decoded ? trim_ows(item.substr(eq + 1)) : item.substr(eq + 1));
        if (percent_decoded && !percent_decode(std::string(header_value), header_value))
            return "holds a '%' that is not followed by two hexadecimal digits";
        for (char c : header_value)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                return "holds control characters";
        out.emplace_back(std::string(header), std::move(header_value));
    }
    return {};
}

void otlp_endpoint_from_environment(loader& l, const map_view& map, tracing_config& t)
{
    if (!map.find("otlp_endpoint")) {
        // The per-signal URL is used as it is; the base URL gets the signal's path (exporter.md,
        // "Endpoint URLs for OTLP/HTTP").
        std::string name = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
        const char* value = env_value(l, name);
        if (value) {
            t.otlp_endpoint = value;
        } else if ((value = env_value(l, name = "OTEL_EXPORTER_OTLP_ENDPOINT"))) {
            std::string base = value;
            t.otlp_endpoint = base + (base.ends_with('/') ? "" : "/") + "v1/traces";
        }
        if (value)
            if (auto problem = otlp_url_problem(t.otlp_endpoint); !problem.empty())
                l.problem(map.path_of("otlp_endpoint"),
                          "from the environment variable " + name + ": " + problem);
    }
    // Read before the tls map, which may then name its files without repeating enabled: true.
    t.tls.enabled = t.otlp_endpoint.starts_with("https://");
}

void tracing_from_environment(loader& l, const map_view& map, tracing_config& t)
{
    const bool https = t.otlp_endpoint.starts_with("https://");
    if (map.find("tls") && !t.otlp_endpoint.empty() && t.tls.enabled != https)
        l.problem(child_path(map.path_of("tls"), "enabled"),
                  https ? "false while the OTLP endpoint is an https:// URL (TLS is what https means)"
                        : "true while the OTLP endpoint is an http:// URL (use https:// for TLS)");
    bool name_given = map.find("service_name") != nullptr;
    if (const char* name = env_value(l, "OTEL_SERVICE_NAME"); name && !name_given) {
        t.service_name = name;
        name_given = true;
    }
    read_resource_attributes(l, t, name_given);
    if (!map.find("headers_env"))
        for (std::string name : {"OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"})
            if (const char* value = env_value(l, name)) {
                if (auto problem = header_list_problem(value, true, t.headers); !problem.empty())
                    l.problem(map.path(), "the environment variable " + name + " " + problem);
                break;
            }
    for (std::string name : {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"})
        if (const char* value = env_value(l, name)) {
            if (std::string_view(value) != "http/json" && std::string_view(value) != "http/protobuf")
                t.environment_warnings.push_back(
                    name + "=" + value +
                    ": not honoured; spans are exported as OTLP/HTTP with JSON bodies (point the endpoint at "
                    "the collector's OTLP/HTTP port, 4318 by default)");
            break;
        }
    // The one variable with no key in the file: the operator's switch for every SDK of the host.
    if (const char* disabled = env_value(l, "OTEL_SDK_DISABLED")) {
        if (boost::beast::iequals(trim_ows(disabled), "true")) {
            if (!t.otlp_endpoint.empty())
                t.environment_warnings.push_back(
                    "OTEL_SDK_DISABLED=true: tracing is off (no spans exported to " + t.otlp_endpoint + ")");
            t.otlp_endpoint.clear();
        } else if (!boost::beast::iequals(trim_ows(disabled), "false")) {
            t.environment_warnings.push_back(std::string("OTEL_SDK_DISABLED=") + disabled +
                                             ": not true or false; taken as false");
        }
    }
}

} // namespace idemgate::config::detail
