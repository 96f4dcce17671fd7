// SPDX-License-Identifier: Apache-2.0
#pragma once
// Prometheus text exposition: the lines every /metrics writer (the gateway, the store backends,
// histograms) appends.
#include <string>
#include <string_view>

namespace idemgate::prometheus {

// Appends `name{labels} value\n` (labels may be empty).
void sample(std::string& out, std::string_view name, std::string_view labels, double value);

// Appends the # HELP and # TYPE lines.
void header(std::string& out, std::string_view name, std::string_view type, std::string_view help);

// Appends the standard process families every Prometheus client library exports, read from
// /proc/self at each scrape: process_cpu_seconds_total, process_resident_memory_bytes,
// process_virtual_memory_bytes, process_open_fds, process_max_fds, process_start_time_seconds.
// A file that cannot be read leaves its family out.
void process_metrics(std::string& out);

// `"` and `\` escaped, newlines as \n: a label value (the text format's rule).
std::string label_value(std::string_view value);

// The two exposition formats /metrics answers in: the Prometheus text format 0.0.4 (the
// default), and OpenMetrics 1.0 when the scraper's Accept header asks for it at least as much
// as for text/plain (Prometheus sends application/openmetrics-text;version=1.0.0 first).
enum class exposition { text, openmetrics };
exposition negotiate(std::string_view accept);
std::string_view content_type(exposition format);

// A text-format exposition, as the writers above append it, rewritten as OpenMetrics 1.0: a
// counter's family named without its _total (its samples with it), untyped as unknown, `le`
// values as canonical floats, `"` escaped in HELP, and the closing `# EOF`. Exemplars the
// histograms wrote (latency_histogram::render) are kept.
std::string to_openmetrics(std::string_view text);

} // namespace idemgate::prometheus
