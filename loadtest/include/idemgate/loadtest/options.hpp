// SPDX-License-Identifier: Apache-2.0
#pragma once
// idemgate-loadtest's command line, parsed into one plain struct. Every error names the flag.
#include <chrono>
#include <cstdint>
#include <idemgate/loadtest/expectations.hpp>
#include <idemgate/loadtest/series.hpp>
#include <idemgate/loadtest/threshold.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::loadtest {

using namespace std::chrono_literals;

// What the requests do with their keys.
enum class workload {
    replay, // every key executed once in a warm-up, then every timed request is a replay
    first,  // every timed request carries a new key (a first execution)
    mixed,  // replay_percent % replays of warm keys, the rest new keys
    storm   // `copies` concurrent duplicates of each key, racing; exactly one may execute
};
std::string_view to_string(workload w) noexcept;

// An http:// or https:// URL split for a client: where to connect and what to send.
struct target_url {
    bool tls = false; // https://
    std::string host;
    std::string port = "80";  // 443 for https://
    std::string target = "/"; // origin-form: path and query
    std::string host_header;  // Host as written in the URL (host[:port])
    std::string text;         // the URL as given
};

// A request header whose value may contain {key}.
struct header_template {
    std::string name;
    std::string value;
};

// One of several targets (--target, --targets): its own method, URL and body, chosen per key by
// weight (a key always goes to the same target, so its replays compare like with like).
struct request_target {
    std::string text; // as given
    std::string method;
    target_url url;
    std::optional<std::string> body; // @FILE's bytes; none: --body
    unsigned weight = 1;
};

// --stages: an open-loop ramp from the previous stage's rate (0 before the first) to `rate`.
struct rate_stage {
    std::chrono::nanoseconds duration{};
    double rate = 0;
};

struct options {
    target_url url;
    std::vector<request_target> targets; // empty: one target, --url with --method and --body
    workload mode = workload::replay;
    int replay_percent = 100; // mixed:<P>
    std::uint64_t keys = 1000;
    unsigned connections = 16;
    // HTTP/2: h2 by ALPN for https://, h2c with prior knowledge for http://; `streams` requests
    // in flight on each connection, each stream a lane of its own.
    bool http2 = false;
    unsigned streams = 1;
    unsigned threads = 0; // 0: min(2, cores, connections)
    std::optional<std::chrono::nanoseconds> duration;
    std::optional<std::uint64_t> requests;
    std::optional<double> rate;     // requests per second over all connections: open loop
    std::vector<rate_stage> stages; // open loop in ramps (sets `duration` to their sum)
    unsigned copies = 0;            // storm: duplicates of each key; 0: one per connection
    std::string method = "POST";
    std::vector<header_template> headers; // -H, in order
    std::string body;                     // --body, may contain {key}
    std::string key_header = "Idempotency-Key";
    std::string tenant_header = "X-Tenant-ID";
    std::optional<std::string> tenant;
    std::string key_prefix;          // empty: a random prefix per run
    std::vector<target_url> metrics; // --metrics, summed (several instances of a fleet)
    // Lower-case names left out of the replay comparison. X-Request-Id and Date always: the
    // gateway gives every answer, replays included, its own request's ID (request_id_header) and
    // a replay a fresh Date.
    std::vector<std::string> ignore_headers{"x-request-id", "date"};
    std::chrono::nanoseconds timeout = 10s; // every connect, write and read
    // Answers with these statuses are expected; more than max_unexpected_percent % of others fail
    // the run. Without --expect-status: default_expected_statuses(mode).
    status_set expected_statuses;
    bool expected_given = false;
    double max_unexpected_percent = 0;
    // https://: the server's certificate is checked against the system's CAs (or --cacert) and
    // the URL's host, unless --insecure.
    bool insecure = false;
    std::string cacert;
    bool json = false;
    std::chrono::nanoseconds interval = 1s; // a row of the time series (and the live line)
    std::string series_path;                // --series: "" none
    series_format series_fmt = series_format::ndjson;
    std::vector<threshold> thresholds;
    std::string report_path;               // --report FILE.html: "" none
    std::vector<std::string> command_line; // the arguments as given, for the report
    bool help = false;
    bool version = false;

    // Requests in flight at once: a connection each over HTTP/1.1, --streams per connection over
    // HTTP/2.
    unsigned lanes() const noexcept { return connections * streams; }
};

// A command line that cannot run; what() names the flag.
class usage_error : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// Parses argv[1..] (without the program name). Throws usage_error.
options parse_options(const std::vector<std::string>& args);

// The --help text.
std::string usage_text();

// "http[s]://host[:port][/path][?query]"; nullopt with `error` set otherwise.
std::optional<target_url> parse_url(std::string_view text, std::string& error);

// "METHOD URL [@BODY] [weight]" (--target, a line of --targets). Throws usage_error naming `flag`.
request_target parse_target(std::string_view flag, std::string_view text);
// The lines of a --targets file (blank lines and # comments skipped). Throws usage_error.
std::vector<request_target> read_targets_file(const std::string& path);
// "10s:1000,30s:5000". Throws usage_error.
std::vector<rate_stage> parse_stages(std::string_view text);
// The bytes of a file named in --body @FILE or a target's @BODY. Throws usage_error naming `flag`.
std::string read_body_file(std::string_view flag, const std::string& path);
// When request `n` (from 0) of an open loop in stages is due, in seconds from the start; nullopt
// once the stages are over.
std::optional<double> stage_offset_seconds(const std::vector<rate_stage>& stages, double n);
// How many requests the stages send in all.
double stage_requests(const std::vector<rate_stage>& stages);

// "250ms", "10s", "2m", "1h", or a bare number of seconds; nullopt when invalid or not positive.
std::optional<std::chrono::nanoseconds> parse_duration(std::string_view text);

} // namespace idemgate::loadtest
