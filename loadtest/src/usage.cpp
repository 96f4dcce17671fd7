// SPDX-License-Identifier: Apache-2.0
// The --help text.
#include <idemgate/loadtest/options.hpp>

namespace idemgate::loadtest {

std::string usage_text()
{
    return R"(usage: idemgate-loadtest [--url] http[s]://HOST:PORT/PATH [options]
       idemgate-loadtest --target 'METHOD URL [@BODY] [WEIGHT]' ... [options]
       idemgate-loadtest compare A.json B.json

Load-tests an idempotency gateway (idemgate or any server speaking the Idempotency-Key
contract) and checks, while it measures, that every replay is the first answer byte for byte.

Workload
  --mode M           replay (default): each key executed once in a warm-up, then every
                     timed request is a replay of one of them
                     first: every request a new key (a first execution)
                     mixed:P: P % replays of warm keys, the rest new keys
                     storm: --copies duplicates of each key sent at once over all
                     connections; exactly one may execute
  --keys N           warm keys (replay, mixed) or storm keys (default 1000; storm 100)
  --copies N         storm: duplicates of each key (default: --connections x --streams)
  --connections C, -c C
                     keep-alive connections (default 16)
  --http2            HTTP/2: h2 by ALPN for https:// URLs, h2c with prior knowledge for
                     http:// URLs; every mode and check works as over HTTP/1.1
  --streams N        --http2: requests in flight on each connection, one per stream (default
                     1, as in h2load); --connections x --streams in flight in all
  --threads T, -t T  I/O threads, one io_context each (default min(2, cores))
  --duration D, -d D timed phase length, e.g. 10s, 500ms, 2m (default 10s)
  --requests N, -n N timed phase of exactly N requests instead of a duration
  --rate R, -R R     open loop: R requests/s over all connections at fixed intended send
                     times; latency counts from the intended time (no coordinated omission).
                     Without --rate: closed loop (each connection sends when answered)
  --stages S         open loop in ramps, e.g. 10s:1000,30s:5000: each stage goes linearly
                     from the previous stage's rate (0 before the first) to its own over its
                     duration; the run lasts their sum (not with --rate, --duration, --requests)
  --timeout D        deadline of every connect, write and read, and over HTTP/2 of every
                     stream's answer (default 10s)

Requests
  --url URL          the target (or the URL alone, without --url, as wrk and oha take it)
  --target 'METHOD URL [@BODY] [WEIGHT]'
                     one of several targets (repeatable), each with its method, URL, body
                     file and weight (default 1); every key goes to one target, chosen by
                     weight, so its replays compare like with like. One origin per run
  --targets FILE     targets, one per line as --target (blank lines and # comments skipped)
  --method M, -X M   default POST
  --header 'Name: value', -H 'Name: value'
                     extra header, repeatable; {key} is replaced by the request's key
  --body TEMPLATE    request body; {key} is replaced by the request's key
  --body @FILE       request body: the file's bytes as they are
  --key-header NAME  default Idempotency-Key
  --key-prefix P     keys are P-<n> (default: a random prefix per run, so runs never share keys)
  --tenant T         sends the tenant header (X-Tenant-ID, or --tenant-header NAME)
  --tenant-header NAME
                     the tenant header's name

Checks and output
  --metrics URL      the gateway's admin /metrics (repeatable: summed over instances); read
                     before and after to report upstream executions per key, and at each
                     --interval for the series' upstream executions so far
  --ignore-header N  leave header N out of the replay comparison (repeatable), for headers a
                     proxy in front of the gateway adds per answer (X-Request-Id and Date are
                     always left out: every answer carries its own request's ID, a replay a
                     fresh Date)
  --expect-status L  statuses the run expects, e.g. 2xx,409 (default: below 400; a storm also
                     409); any other answer is unexpected
  --max-unexpected P more than P % unexpected answers fail the run (default 0); a warm-up or
                     phase whose first 100 answers are 90 % unexpected stops at once
  --insecure, -k     https://: do not check the server's certificate
  --cacert FILE      https://: trust these PEM certificates instead of the system's
  --threshold T      a bound the run must keep, judged after it, repeatable: p99<5ms,
                     p50<800us, max<1s, mean<2ms (any pN; ns, us, ms, s), rps>10000,
                     errors<0.1% (share of requests without an answer) or errors<5 (a
                     count), mismatches==0; comparisons < <= > >= ==. One that breaks
                     fails the run (exit 1) and is named
  --interval D       a row of the time series every D (default 1s, at least 100ms)
  --series FILE      the time series of the timed phase, one row per --interval: answers,
                     req/s, p50/p99/max latency, 2xx/3xx/4xx/5xx, errors, replays checked and
                     mismatched, upstream executions so far (--metrics); NDJSON for .ndjson or
                     .json, CSV for .csv. On a terminal the live line shows the same figures
  --json             one JSON summary on stdout (no text report); its "series" holds the rows
  --report FILE.html one self-contained page (inline SVG and CSS, no script, nothing fetched):
                     throughput and p50/p99/max latency over time, the latency distribution
                     (log buckets) and by percentile, the status mix, the replay checks, the
                     thresholds and the verdict, and the command line
  --help, --version

compare A.json B.json
                     prints every figure of two --json summaries side by side with the ratio
                     B/A, and marks rps, p50, p99 and max latency (and each series column)
                     "changed" when the two runs' per-interval medians differ by more than the
                     larger of the two interquartile ranges. Exit 0 once compared (it is not a
                     verdict), 2 when a file is unreadable or not a summary

Exit status: 0 every check held; 1 a check failed (mismatched or unmarked replay, a key
executed twice, unexpected answers, errors, executions per key wrong, a --threshold broken);
2 bad command line or unreachable target.
)";
}

} // namespace idemgate::loadtest
