#include <cstdio>
#include <idemgate/gateway/metrics.hpp>
#include <idemgate/store/redis_store.hpp>

namespace idemgate::gateway {

void latency_histogram::observe(std::chrono::nanoseconds d) noexcept
{
    double s = std::chrono::duration<double>(d).count();
    std::size_t i = 0;
    while (i < bounds.size() && s > bounds[i])
        ++i;
    buckets_[i].fetch_add(1, std::memory_order_relaxed);
    count_.fetch_add(1, std::memory_order_relaxed);
    sum_ns_.fetch_add(static_cast<std::uint64_t>(d.count() < 0 ? 0 : d.count()), std::memory_order_relaxed);
}

namespace {

void line(std::string& out, std::string_view name, std::string_view labels, double value)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", value);
    out.append(name);
    if (!labels.empty()) {
        out.push_back('{');
        out.append(labels);
        out.push_back('}');
    }
    out.push_back(' ');
    out.append(buf);
    out.push_back('\n');
}

void header(std::string& out, std::string_view name, std::string_view type, std::string_view help)
{
    out.append("# HELP ").append(name).append(" ").append(help).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

const char* op_name(int i)
{
    static const char* names[] = {"reserve", "complete", "release"};
    return names[i];
}

} // namespace

void latency_histogram::render(std::string& out, std::string_view name, std::string_view labels) const
{
    std::uint64_t cumulative = 0;
    std::string prefix = labels.empty() ? std::string() : std::string(labels) + ",";
    for (std::size_t i = 0; i < bounds.size(); ++i) {
        cumulative += buckets_[i].load(std::memory_order_relaxed);
        char le[32];
        std::snprintf(le, sizeof le, "%g", bounds[i]);
        line(out, std::string(name) + "_bucket", prefix + "le=\"" + le + "\"",
             static_cast<double>(cumulative));
    }
    cumulative += buckets_[bounds.size()].load(std::memory_order_relaxed);
    line(out, std::string(name) + "_bucket", prefix + "le=\"+Inf\"", static_cast<double>(cumulative));
    line(out, std::string(name) + "_sum", labels, static_cast<double>(sum_ns_.load()) / 1e9);
    line(out, std::string(name) + "_count", labels, static_cast<double>(count_.load()));
}

std::string metrics::render(bool ready, const std::function<void(std::string&)>& extra) const
{
    std::string out;
    out.reserve(8192);
    header(out, "idemgate_requests_total", "counter", "Requests by outcome.");
    for (int i = 0; i < outcome_count; ++i)
        line(out, "idemgate_requests_total",
             "outcome=\"" + std::string(to_string(static_cast<outcome>(i))) + "\"",
             static_cast<double>(requests[i].load()));
    header(out, "idemgate_request_duration_seconds", "histogram",
           "Time from request header to response sent.");
    request_latency.render(out, "idemgate_request_duration_seconds", "");
    header(out, "idemgate_store_duration_seconds", "histogram", "Store operation latency.");
    for (int i = 0; i < store_op_count; ++i)
        store_latency[i].render(out, "idemgate_store_duration_seconds",
                                std::string("op=\"") + op_name(i) + "\"");
    header(out, "idemgate_store_errors_total", "counter", "Store operations that failed.");
    for (int i = 0; i < store_op_count; ++i)
        line(out, "idemgate_store_errors_total", std::string("op=\"") + op_name(i) + "\"",
             static_cast<double>(store_errors[i].load()));
    header(out, "idemgate_store_bypassed_total", "counter",
           "Guarded requests forwarded unprotected because the store failed (on_failure: pass_through).");
    line(out, "idemgate_store_bypassed_total", "", static_cast<double>(store_bypassed.load()));
    header(out, "idemgate_records_lost_total", "counter",
           "Responses sent to the client but not recorded (complete failed); the lock expires by lock_ttl.");
    line(out, "idemgate_records_lost_total", "", static_cast<double>(records_lost.load()));
    header(out, "idemgate_upstream_errors_total", "counter", "Upstream failures by kind.");
    line(out, "idemgate_upstream_errors_total", "kind=\"connect\"",
         static_cast<double>(upstream_connect_errors.load()));
    line(out, "idemgate_upstream_errors_total", "kind=\"timeout\"",
         static_cast<double>(upstream_timeouts.load()));
    line(out, "idemgate_upstream_errors_total", "kind=\"bad_response\"",
         static_cast<double>(upstream_bad_responses.load()));
    line(out, "idemgate_upstream_errors_total", "kind=\"status_5xx\"",
         static_cast<double>(upstream_5xx.load()));
    header(out, "idemgate_upstream_connections_total", "counter", "Upstream connections opened and reused.");
    line(out, "idemgate_upstream_connections_total", "kind=\"opened\"",
         static_cast<double>(upstream_connections_opened.load()));
    line(out, "idemgate_upstream_connections_total", "kind=\"reused\"",
         static_cast<double>(upstream_connections_reused.load()));
    header(out, "idemgate_connections_active", "gauge", "Open client connections.");
    line(out, "idemgate_connections_active", "", static_cast<double>(connections_active.load()));
    header(out, "idemgate_connections_refused_total", "counter",
           "Client connections closed at limits.max_connections.");
    line(out, "idemgate_connections_refused_total", "", static_cast<double>(connections_refused.load()));
    header(out, "idemgate_requests_in_flight", "gauge", "Requests between header read and response sent.");
    line(out, "idemgate_requests_in_flight", "", static_cast<double>(requests_in_flight.load()));
    header(out, "idemgate_ready", "gauge", "1 when the gateway is ready (store reachable, not draining).");
    line(out, "idemgate_ready", "", ready ? 1.0 : 0.0);
    if (extra)
        extra(out);
    return out;
}

void render_redis_metrics(const store::redis_stats& s, std::string& out)
{
    auto counter = [&](std::string_view name, std::string_view help, std::string_view labels, double v) {
        header(out, name, "counter", help);
        line(out, name, labels, v);
    };
    counter("idemgate_redis_commands_total", "Commands sent to Redis.", "", double(s.commands_sent.load()));
    header(out, "idemgate_redis_errors_total", "counter", "Redis command failures by kind.");
    line(out, "idemgate_redis_errors_total", "kind=\"unavailable\"", double(s.errors_unavailable.load()));
    line(out, "idemgate_redis_errors_total", "kind=\"timeout\"", double(s.errors_timeout.load()));
    line(out, "idemgate_redis_errors_total", "kind=\"error_reply\"", double(s.errors_reply.load()));
    line(out, "idemgate_redis_errors_total", "kind=\"protocol\"", double(s.errors_protocol.load()));
    line(out, "idemgate_redis_errors_total", "kind=\"corrupt_record\"", double(s.errors_corrupt.load()));
    counter("idemgate_redis_connects_total", "Redis connections established.", "", double(s.connects.load()));
    counter("idemgate_redis_reconnect_attempts_total", "Redis reconnect attempts.", "",
            double(s.reconnect_attempts.load()));
    header(out, "idemgate_redis_connections_up", "gauge", "I/O threads whose Redis connection is up.");
    line(out, "idemgate_redis_connections_up", "", double(s.connections_up.load()));
    header(out, "idemgate_redis_command_duration_seconds", "histogram",
           "Redis command latency, enqueue to reply.");
    std::uint64_t cumulative = 0;
    for (std::size_t i = 0; i < s.latency_bounds_us.size(); ++i) {
        cumulative += s.latency_buckets[i].load();
        char le[32];
        std::snprintf(le, sizeof le, "%g", double(s.latency_bounds_us[i]) / 1e6);
        line(out, "idemgate_redis_command_duration_seconds_bucket", std::string("le=\"") + le + "\"",
             double(cumulative));
    }
    cumulative += s.latency_buckets[s.latency_bounds_us.size()].load();
    line(out, "idemgate_redis_command_duration_seconds_bucket", "le=\"+Inf\"", double(cumulative));
    line(out, "idemgate_redis_command_duration_seconds_sum", "", double(s.latency_sum_us.load()) / 1e6);
    line(out, "idemgate_redis_command_duration_seconds_count", "", double(s.latency_count.load()));
}

} // namespace idemgate::gateway
