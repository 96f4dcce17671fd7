// SPDX-License-Identifier: Apache-2.0
#include "observability/access_log.hpp"

#include <charconv>
#include <ctime>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

namespace {

constexpr char hex_digits[] = "0123456789ABCDEF";

// Appends `raw` as log_safe() would render it, as the body of a JSON string ('"' and '\'
// escaped; everything else is printable ASCII by then).
void append_safe(std::string& out, std::string_view raw)
{
    for (unsigned char c : raw) {
        if (c >= 0x20 && c < 0x7f) {
            if (c == '"' || c == '\\')
                out.push_back('\\');
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex_digits[c >> 4]);
            out.push_back(hex_digits[c & 0xf]);
        }
    }
}

// One access-log line, written straight into a reused buffer: no JSON object, no per-field
// strings (the line used to be a boost::json::object, ~15 allocations per request).
class line_writer {
public:
    explicit line_writer(std::string& out) : out_(out)
    {
        out_.clear();
        out_.push_back('{');
    }
    void text(std::string_view name, std::string_view value)
    {
        key(name);
        out_.push_back('"');
        append_safe(out_, value);
        out_.push_back('"');
    }
    void number(std::string_view name, std::int64_t value)
    {
        key(name);
        char digits[24];
        auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value);
        out_.append(digits, ec == std::errc{} ? end : digits);
    }
    // A fixed-point number of `micro` millionths written as units with three decimals (e.g.
    // microseconds as milliseconds: 1234 -> 1.234), without floating point.
    void thousandths(std::string_view name, std::int64_t micro)
    {
        key(name);
        if (micro < 0) {
            out_.push_back('-');
            micro = -micro;
        }
        const std::int64_t whole = micro / 1000, part = micro % 1000;
        char digits[24];
        auto [end, ec] = std::to_chars(digits, digits + sizeof digits, whole);
        out_.append(digits, ec == std::errc{} ? end : digits);
        out_.push_back('.');
        out_.push_back(static_cast<char>('0' + part / 100));
        out_.push_back(static_cast<char>('0' + part / 10 % 10));
        out_.push_back(static_cast<char>('0' + part % 10));
    }
    // `unix_ms` as ISO 8601 in UTC with milliseconds ("2026-12-06T16:20:01.123Z"); the date and
    // time of day are formatted once a second per thread.
    void utc_time(std::string_view name, long long unix_ms)
    {
        thread_local long long second = -1;
        thread_local char head[24]; // "YYYY-MM-DDTHH:MM:SS."
        if (unix_ms / 1000 != second) {
            second = unix_ms / 1000;
            const std::time_t t = static_cast<std::time_t>(second);
            std::tm parts{};
            ::gmtime_r(&t, &parts);
            std::strftime(head, sizeof head, "%Y-%m-%dT%H:%M:%S.", &parts);
        }
        const auto ms = static_cast<int>(unix_ms % 1000);
        key(name);
        out_.push_back('"');
        out_.append(head, 20);
        out_.push_back(static_cast<char>('0' + ms / 100));
        out_.push_back(static_cast<char>('0' + ms / 10 % 10));
        out_.push_back(static_cast<char>('0' + ms % 10));
        out_.append("Z\"", 2);
    }
    std::string_view finish()
    {
        out_.push_back('}');
        return out_;
    }

private:
    void key(std::string_view name)
    {
        if (out_.size() > 1)
            out_.push_back(',');
        out_.push_back('"');
        out_.append(name);
        out_.append("\":", 2);
    }
    std::string& out_;
};

void add_status(line_writer& line, unsigned status, boost::system::error_code write_ec)
{
    // Only what reached the client is logged as its status (a 408 that was never
    // delivered was logged as sent).
    line.number("status", write_ec ? 0 : status);
    if (write_ec) {
        line.number("intended_status", status);
        line.text("client_write_error", write_ec.message());
    }
}

void add_ids(line_writer& line, const request_ids& ids)
{
    if (!ids.request_id.empty())
        line.text("request_id", ids.request_id);
    if (!ids.trace_id.empty())
        line.text("trace_id", ids.trace_id);
}

// The fields every access line starts with.
void begin_access_line(line_writer& line, const request_exchange& ex)
{
    const auto now = log::now_unix_ms();
    line.number("ts", now);
    line.utc_time("time", now);
    line.text("level", "info");
    line.text("msg", "access");
    const auto client = ex.client_ip();
    line.text("client", client);
    // Behind a balancer: the peer the connection came from, when it is not the client.
    if (ex.client && ex.client->peer != client && !ex.client->peer.empty())
        line.text("peer", ex.client->peer);
}

// This thread's line buffer (reused: its capacity stays).
std::string& scratch()
{
    thread_local std::string buffer;
    return buffer;
}

// Into this thread's batch; the buffer is made on the thread's first line.
void emit(const access_log_sink& sink, std::string_view line)
{
    if (!sink.buffer)
        sink.buffer = std::make_unique<access_log_buffer>(*sink.writer, sink.ioc.get_executor());
    sink.buffer->append(line);
}

// The protocol the request came in ("protocol"; left out when a refused HTTP/1 request's line
// was never read), and an HTTP/2 stream's number.
void add_protocol(line_writer& line, const request_exchange& ex)
{
    if (ex.stream == 0) {
        if (ex.req)
            line.text("protocol", ex.req->version() == 10 ? "HTTP/1.0" : "HTTP/1.1");
        return;
    }
    line.text("protocol", "HTTP/2");
    line.text("proto", "h2");
    line.number("stream", static_cast<std::int64_t>(ex.stream));
}

} // namespace

std::string log_safe(std::string_view raw)
{
    std::string out;
    out.reserve(raw.size());
    for (unsigned char c : raw) {
        if (c >= 0x20 && c < 0x7f) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex_digits[c >> 4]);
            out.push_back(hex_digits[c & 0xf]);
        }
    }
    return out;
}

void log_request(const access_log_sink& sink, const request_exchange& ex,
                 std::chrono::steady_clock::duration elapsed, const access_names& names)
{
    if (!sink.writer)
        return;
    const auto& req = *ex.req;
    const auto& h = ex.answer;
    line_writer line(scratch());
    begin_access_line(line, ex);
    line.text("method", req.method_string());
    line.text("target", req.target());
    add_protocol(line, ex);
    line.text("route", names.route);
    add_status(line, h.response.result_int(), ex.write_error);
    line.text("outcome", to_string(h.result));
    if (!h.key.empty()) {
        line.text("tenant", h.tenant);
        line.text("key", h.key);
    }
    if (!h.principal.empty())
        line.text("principal", h.principal);
    if (h.shadow != shadow_finding::none)
        line.text("shadow", to_string(h.shadow));
    line.number("latency_us", std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count());
    if (h.upstream_us >= 0) {
        line.text("upstream", names.upstream);
        line.text("upstream_address", h.upstream_address);
        line.number("upstream_us", h.upstream_us);
        line.thousandths("upstream_ms", h.upstream_us);
        if (!h.upstream_error.empty())
            line.text("error", h.upstream_error);
    }
    line.number("bytes_in", static_cast<std::int64_t>(req.body().size()));
    line.number("bytes_out", static_cast<std::int64_t>(ex.bytes_out));
    if (auto ua = req.find(http::field::user_agent); ua != req.end())
        line.text("user_agent", ua->value());
    add_ids(line, ex.ids);
    emit(sink, line.finish());
}

void log_rejected(const access_log_sink& sink, const request_exchange& ex)
{
    if (!sink.writer)
        return;
    line_writer line(scratch());
    begin_access_line(line, ex);
    add_protocol(line, ex);
    line.text("route", "none");
    add_status(line, ex.answer.response.result_int(), ex.write_error);
    line.text("outcome", "rejected");
    line.text("detail", ex.refused);
    add_ids(line, ex.ids);
    emit(sink, line.finish());
}

} // namespace idemgate::gateway::detail
