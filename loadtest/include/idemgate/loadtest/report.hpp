#pragma once
// The end-of-run summary: a text report for people, one JSON object for CI (--json).
#include <boost/json/object.hpp>
#include <idemgate/loadtest/runner.hpp>
#include <ostream>
#include <string>

namespace idemgate::loadtest {

void write_text_report(std::ostream& out, const run_result& r);
boost::json::object json_report(const run_result& r);

// "850µs", "12.3ms", "1.20s" for a duration in nanoseconds.
std::string format_latency(std::uint64_t ns);

} // namespace idemgate::loadtest
