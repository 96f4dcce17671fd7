// SPDX-License-Identifier: Apache-2.0
// Tracing without I/O: traceparent parsing and formatting, the parent-based ratio sampler, IDs,
// and the OTLP/HTTP JSON encoding of spans.
#include <boost/json/parse.hpp>
#include <doctest/doctest.h>
#include <idemgate/gateway/tracing.hpp>
#include <set>

using namespace idemgate::gateway::tracing;
namespace json = boost::json;

TEST_CASE("traceparent: valid version-00 values parse; anything else is no parent")
{
    auto p = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    REQUIRE(p);
    CHECK(hex(p->trace.data(), 16) == "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK(hex(p->span.data(), 8) == "00f067aa0ba902b7");
    CHECK(p->sampled);
    auto unsampled = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
    REQUIRE(unsampled);
    CHECK_FALSE(unsampled->sampled);
    for (const char* bad : {"", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", // unknown version
                            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", // upper case
                            "00-00000000000000000000000000000000-00f067aa0ba902b7-01", // zero trace
                            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", // zero span
                            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g", // bad flags
                            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}) {
        CAPTURE(bad);
        CHECK_FALSE(parse_traceparent(bad));
    }
    CHECK(format_traceparent(p->trace, p->span, true) ==
          "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
    CHECK(format_traceparent(p->trace, p->span, false).ends_with("-00"));
}

TEST_CASE("sampling: a parent's decision is kept; new traces follow the ratio")
{
    trace_id any = new_trace_id();
    parent_context yes{any, new_span_id(), true}, no{any, new_span_id(), false};
    CHECK(sample(yes, any, 0.0));
    CHECK_FALSE(sample(no, any, 1.0));
    CHECK(sample(std::nullopt, any, 1.0));
    CHECK_FALSE(sample(std::nullopt, any, 0.0));
    int sampled = 0;
    for (int i = 0; i < 20000; ++i)
        sampled += sample(std::nullopt, new_trace_id(), 0.25) ? 1 : 0;
    CHECK(sampled > 4500); // 5000 expected; 7 standard deviations either side
    CHECK(sampled < 5500);
    // The same trace ID gets the same decision (every hop with this ratio agrees).
    auto t = new_trace_id();
    CHECK(sample(std::nullopt, t, 0.5) == sample(std::nullopt, t, 0.5));
}

TEST_CASE("IDs are random and never zero")
{
    std::set<std::string> seen;
    for (int i = 0; i < 1000; ++i) {
        auto t = new_trace_id();
        auto s = new_span_id();
        seen.insert(hex(t.data(), 16));
        CHECK(hex(s.data(), 8) != "0000000000000000");
    }
    CHECK(seen.size() == 1000);
}

TEST_CASE("OTLP JSON: resource, scope, spans with hex IDs, string nanoseconds, attributes, events, status")
{
    span server;
    server.trace = new_trace_id();
    server.id = new_span_id();
    server.name = "POST /api/";
    server.kind = span_kind::server;
    server.start_unix_ns = 1700000000000000000ULL;
    server.end_unix_ns = 1700000000001000000ULL;
    server.attributes = {{"http.request.method", std::string("POST")},
                         {"http.response.status_code", std::int64_t{201}},
                         {"idemgate.replayed", false},
                         {"x.ratio", 0.5}};
    server.events.push_back({"wait", 1700000000000500000ULL, {{"result", std::string("replayed")}}});
    span client = server;
    client.id = new_span_id();
    client.parent = server.id;
    client.kind = span_kind::client;
    client.name = "store reserve";
    client.error = true;
    client.events.clear();
    auto text = encode_otlp_json({server, client}, "idemgate", "0.1.0");
    auto doc = json::parse(text).as_object();
    auto& rs = doc.at("resourceSpans").as_array().at(0).as_object();
    auto& resource_attrs = rs.at("resource").as_object().at("attributes").as_array();
    CHECK(resource_attrs.at(0).at("key") == "service.name");
    CHECK(resource_attrs.at(0).at("value").at("stringValue") == "idemgate");
    auto& ss = rs.at("scopeSpans").as_array().at(0).as_object();
    CHECK(ss.at("scope").at("name") == "idemgate");
    auto& spans = ss.at("spans").as_array();
    REQUIRE(spans.size() == 2);
    auto& s0 = spans.at(0).as_object();
    CHECK(s0.at("traceId").as_string().size() == 32);
    CHECK(s0.at("spanId").as_string().size() == 16);
    CHECK(!s0.contains("parentSpanId"));
    CHECK(s0.at("kind") == 2);
    CHECK(s0.at("startTimeUnixNano") == "1700000000000000000");
    CHECK(s0.at("attributes").at(1).at("value").at("intValue") == "201");
    CHECK(s0.at("attributes").at(2).at("value").at("boolValue") == false);
    CHECK(s0.at("attributes").at(3).at("value").at("doubleValue") == 0.5);
    CHECK(s0.at("events").at(0).at("name") == "wait");
    CHECK(s0.at("status").as_object().empty());
    auto& s1 = spans.at(1).as_object();
    CHECK(s1.at("parentSpanId") == s0.at("spanId"));
    CHECK(s1.at("traceId") == s0.at("traceId"));
    CHECK(s1.at("kind") == 3);
    CHECK(s1.at("status").at("code") == 2);
}
