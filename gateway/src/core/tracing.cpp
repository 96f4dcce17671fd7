// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <chrono>
#include <idemgate/common/digest.hpp>
#include <idemgate/gateway/tracing.hpp>
#include <random>

namespace idemgate::gateway::tracing {

namespace json = boost::json;

namespace {

template<std::size_t N>
bool parse_hex(std::string_view text, std::array<std::uint8_t, N>& out) noexcept
{
    if (text.size() != 2 * N)
        return false;
    bool any = false;
    for (std::size_t i = 0; i < N; ++i) {
        int hi = idemgate::lower_hex_value(text[2 * i]), lo = idemgate::lower_hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0)
            return false;
        out[i] = static_cast<std::uint8_t>(hi * 16 + lo);
        any = any || out[i] != 0;
    }
    return any; // all zeros is invalid
}

std::mt19937_64& rng()
{
    thread_local std::mt19937_64 generator{[] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd()};
        return std::mt19937_64(seq);
    }()};
    return generator;
}

template<std::size_t N>
std::array<std::uint8_t, N> random_id()
{
    std::array<std::uint8_t, N> id{};
    do {
        for (std::size_t i = 0; i < N; i += 8) {
            auto v = rng()();
            for (std::size_t j = 0; j < 8 && i + j < N; ++j)
                id[i + j] = static_cast<std::uint8_t>(v >> (8 * j));
        }
    } while (std::all_of(id.begin(), id.end(), [](std::uint8_t b) { return b == 0; }));
    return id;
}

json::object json_attribute(const attribute& a)
{
    json::object value;
    std::visit(
        [&](const auto& v) {
            using T = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<T, std::string>)
                value["stringValue"] = v;
            else if constexpr (std::is_same_v<T, std::int64_t>)
                value["intValue"] = std::to_string(v); // int64 as a string (proto3 JSON mapping)
            else if constexpr (std::is_same_v<T, double>)
                value["doubleValue"] = v;
            else
                value["boolValue"] = v;
        },
        a.value);
    return json::object{{"key", a.key}, {"value", std::move(value)}};
}

json::array json_attributes(const std::vector<attribute>& attributes)
{
    json::array out;
    for (const auto& a : attributes)
        out.push_back(json_attribute(a));
    return out;
}

} // namespace

std::string hex(const std::uint8_t* bytes, std::size_t n)
{
    std::string out;
    append_hex(out, bytes, n);
    return out;
}

std::optional<parent_context> parse_traceparent(std::string_view v) noexcept
{
    // version "00": exactly 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
    if (v.size() != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-' || v.substr(0, 2) != "00")
        return std::nullopt;
    parent_context p;
    std::array<std::uint8_t, 1> flags{};
    if (!parse_hex(v.substr(3, 32), p.trace) || !parse_hex(v.substr(36, 16), p.span))
        return std::nullopt;
    int hi = idemgate::lower_hex_value(v[53]), lo = idemgate::lower_hex_value(v[54]);
    if (hi < 0 || lo < 0)
        return std::nullopt;
    flags[0] = static_cast<std::uint8_t>(hi * 16 + lo);
    p.sampled = (flags[0] & 1) != 0;
    return p;
}

std::string format_traceparent(const trace_id& trace, const span_id& span, bool sampled)
{
    return "00-" + hex(trace.data(), trace.size()) + "-" + hex(span.data(), span.size()) +
           (sampled ? "-01" : "-00");
}

bool sample(const std::optional<parent_context>& parent, const trace_id& trace, double ratio) noexcept
{
    if (parent)
        return parent->sampled;
    if (ratio <= 0)
        return false;
    if (ratio >= 1)
        return true;
    // The trace ID's last 8 bytes as a number against ratio x 2^64 (the randomness the W3C
    // level 2 draft puts there; TraceIdRatioBased samplers compare the same way).
    std::uint64_t low = 0;
    for (std::size_t i = 8; i < 16; ++i)
        low = (low << 8) | trace[i];
    return static_cast<double>(low) < ratio * 18446744073709551616.0;
}

trace_id new_trace_id()
{
    return random_id<16>();
}

span_id new_span_id()
{
    return random_id<8>();
}

std::uint64_t now_unix_ns() noexcept
{
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                          .count());
}

std::string new_instance_id()
{
    auto id = random_id<16>();
    id[6] = static_cast<std::uint8_t>((id[6] & 0x0f) | 0x40); // version 4
    id[8] = static_cast<std::uint8_t>((id[8] & 0x3f) | 0x80); // variant 10
    auto text = hex(id.data(), id.size());
    for (std::size_t at : {8, 13, 18, 23})
        text.insert(at, 1, '-');
    return text;
}

std::string encode_otlp_json(const std::vector<span>& spans, std::string_view service_name,
                             std::string_view service_version)
{
    return encode_otlp_json(
        spans,
        {{"service.name", std::string(service_name)}, {"service.version", std::string(service_version)}},
        service_version);
}

std::string encode_otlp_json(const std::vector<span>& spans, const std::vector<attribute>& resource,
                             std::string_view service_version)
{
    json::array out_spans;
    for (const auto& s : spans) {
        json::object o;
        o["traceId"] = hex(s.trace.data(), s.trace.size());
        o["spanId"] = hex(s.id.data(), s.id.size());
        if (s.parent)
            o["parentSpanId"] = hex(s.parent->data(), s.parent->size());
        o["name"] = s.name;
        o["kind"] = static_cast<int>(s.kind);
        o["startTimeUnixNano"] = std::to_string(s.start_unix_ns);
        o["endTimeUnixNano"] = std::to_string(s.end_unix_ns);
        o["attributes"] = json_attributes(s.attributes);
        if (!s.events.empty()) {
            json::array events;
            for (const auto& e : s.events)
                events.push_back(json::object{{"name", e.name},
                                              {"timeUnixNano", std::to_string(e.time_unix_ns)},
                                              {"attributes", json_attributes(e.attributes)}});
            o["events"] = std::move(events);
        }
        o["status"] = s.error ? json::object{{"code", 2}} : json::object{};
        out_spans.push_back(std::move(o));
    }
    json::object resource_object{{"attributes", json_attributes(resource)}};
    json::object scope_spans{{"scope", json::object{{"name", "idemgate"}, {"version", service_version}}},
                             {"spans", std::move(out_spans)}};
    json::object resource_spans{{"resource", std::move(resource_object)},
                                {"scopeSpans", json::array{std::move(scope_spans)}}};
    return json::serialize(json::object{{"resourceSpans", json::array{std::move(resource_spans)}}});
}

} // namespace idemgate::gateway::tracing
