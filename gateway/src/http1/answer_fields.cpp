// SPDX-License-Identifier: Apache-2.0
#include "http1/answer_fields.hpp"

#include "core/http_date.hpp"
#include "tier/local_tier.hpp"
#include "transport/wire.hpp"

#include <boost/beast/core/string.hpp>

namespace idemgate::gateway::detail {

void append_answer_fields(std::string& out, const handled& h, bool has_date)
{
    if (!h.status_header.empty()) {
        auto value = to_string(h.key_state);
        out.append(h.status_header).append(": ", 2).append(value).append("\r\n", 2);
    }
    if (!has_date)
        out.append("Date: ", 6).append(http_date_now()).append("\r\n", 2);
}

namespace {

// The Connection field Beast's keep_alive() adds to an answer without one: keep-alive for an
// HTTP/1.0 client that keeps the connection, close for an HTTP/1.1 one that does not, else none.
std::string_view connection_line(unsigned version, bool keep_alive)
{
    if (version == 10 && keep_alive)
        return "Connection: keep-alive\r\n";
    if (version != 10 && !keep_alive)
        return "Connection: close\r\n";
    return {};
}

} // namespace

std::array<boost::asio::const_buffer, 2> answer_buffers(handled& h, std::string& scratch, bool keep_alive,
                                                        id_field id)
{
    auto& res = h.response;
    const auto id_header = id.name;
    const auto request_id = id.value;
    // One pass, lengths first (cheaper than lookups in the ordered index): is there a Date, a
    // Connection, a field of the status header's name the upstream sent (this answer replaces
    // it) and one of the request ID's name (replaced by this request's).
    bool has_date = false, has_connection = false, has_id = false;
    const bool with_id = !id_header.empty() && !request_id.empty();
    auto own = res.end();
    for (auto it = res.begin(); it != res.end(); ++it) {
        const auto name = it->name();
        if (name == http::field::date) {
            has_date = true;
        } else if (name == http::field::connection) {
            has_connection = true;
        } else {
            const auto text = it->name_string();
            if (!h.status_header.empty() && text.size() == h.status_header.size() &&
                boost::beast::iequals(text, h.status_header))
                own = it;
            if (with_id && text.size() == id_header.size() && boost::beast::iequals(text, id_header))
                has_id = true;
        }
    }
    if (own != res.end())
        res.erase(h.status_header); // every line of that name
    if (has_id)
        res.erase(id_header);
    // Connection as Beast's keep_alive() sets it: through it when the answer has the field
    // (the gateway's own answers), else the one line it would add (a proxied answer's was
    // stripped as hop-by-hop), without its token parsing and field insertion.
    std::string_view connection;
    if (has_connection)
        res.keep_alive(keep_alive);
    else
        connection = connection_line(res.version(), keep_alive);
    scratch.clear();
    render_head(res.base(), scratch);
    scratch.resize(scratch.size() - 2); // the blank line goes after the added fields
    scratch.append(connection);
    if (with_id)
        scratch.append(id_header).append(": ", 2).append(request_id).append("\r\n", 2);
    append_answer_fields(scratch, h, has_date);
    scratch.append("\r\n", 2);
    return {boost::asio::buffer(scratch), boost::asio::buffer(res.body().data(), res.body().size())};
}

std::array<boost::asio::const_buffer, 7> tier_answer_buffers(const tier_entry& e, unsigned version,
                                                             bool keep_alive, std::string_view extra)
{
    namespace asio = boost::asio;
    std::string_view proto = version == 10 ? "HTTP/1.0" : "HTTP/1.1";
    const std::string_view connection = connection_line(version, keep_alive);
    return {asio::buffer(proto.data(), proto.size()),
            asio::buffer(e.http1.status_line),
            asio::buffer(e.http1.fields),
            asio::buffer(connection.data(), connection.size()),
            asio::buffer(extra.data(), extra.size()),
            asio::buffer("\r\n", 2),
            asio::buffer(e.record.body)};
}

} // namespace idemgate::gateway::detail
