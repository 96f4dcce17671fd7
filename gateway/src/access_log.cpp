#include "access_log.hpp"

#include <boost/json/object.hpp>
#include <boost/json/serialize.hpp>
#include <idemgate/common/log.hpp>

namespace idemgate::gateway::detail {

std::string log_safe(std::string_view raw)
{
    static constexpr char hex[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(raw.size());
    for (unsigned char c : raw) {
        if (c >= 0x20 && c < 0x7f) {
            out.push_back(static_cast<char>(c));
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        }
    }
    return out;
}

namespace {

void add_status(boost::json::object& line, unsigned status, boost::system::error_code write_ec)
{
    // Only what reached the client is logged as its status (issue 8: a 408 that was never
    // delivered was logged as sent).
    line["status"] = write_ec ? 0u : status;
    if (write_ec) {
        line["intended_status"] = status;
        line["client_write_error"] = write_ec.message();
    }
}

void add_ids(boost::json::object& line, const request_ids& ids)
{
    if (!ids.request_id.empty())
        line["request_id"] = log_safe(ids.request_id);
    if (!ids.trace_id.empty())
        line["trace_id"] = ids.trace_id;
}

// Into this thread's batch; the buffer is made on the thread's first line.
void emit(gateway_context& ctx, worker& w, const boost::json::object& line)
{
    if (!ctx.access_log)
        return;
    if (!w.access_log)
        w.access_log = std::make_unique<access_log_buffer>(*ctx.access_log, w.ioc.get_executor());
    w.access_log->append(boost::json::serialize(line));
}

} // namespace

void log_request(gateway_context& ctx, worker& w, const request_type& req, const handled& h,
                 const client_info& client, const request_ids& ids,
                 std::chrono::steady_clock::duration elapsed, boost::system::error_code write_ec)
{
    boost::json::object line;
    line["ts"] = log::now_unix_ms();
    line["msg"] = "access";
    line["client"] = client.ip;
    line["method"] = log_safe(req.method_string());
    line["target"] = log_safe(req.target());
    add_status(line, h.response.result_int(), write_ec);
    line["outcome"] = to_string(h.result);
    if (!h.key.empty()) {
        line["tenant"] = log_safe(h.tenant);
        line["key"] = log_safe(h.key);
    }
    if (!h.principal.empty())
        line["principal"] = h.principal;
    if (h.shadow != shadow_finding::none)
        line["shadow"] = to_string(h.shadow);
    line["latency_us"] = std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count();
    add_ids(line, ids);
    emit(ctx, w, line);
}

void log_rejected(gateway_context& ctx, worker& w, const client_info& client, const request_ids& ids,
                  unsigned status, std::string_view detail, boost::system::error_code write_ec)
{
    boost::json::object line;
    line["ts"] = log::now_unix_ms();
    line["msg"] = "access";
    line["client"] = client.ip;
    add_status(line, status, write_ec);
    line["outcome"] = "rejected";
    line["detail"] = log_safe(detail);
    add_ids(line, ids);
    emit(ctx, w, line);
}

} // namespace idemgate::gateway::detail
