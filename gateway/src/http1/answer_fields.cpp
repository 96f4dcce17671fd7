// SPDX-License-Identifier: Apache-2.0
#include "http1/answer_fields.hpp"

#include "core/http_date.hpp"
#include "idempotency/local_tier.hpp"
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

std::array<boost::asio::const_buffer, 2> answer_buffers(response_type& res, const handled& h,
                                                        std::string& scratch)
{
    // One pass, lengths first (cheaper than two lookups in the ordered index): is there a Date,
    // and a field of the status header's name the upstream sent, which this answer replaces.
    bool has_date = false;
    auto own = res.end();
    for (auto it = res.begin(); it != res.end(); ++it) {
        if (it->name() == http::field::date) {
            has_date = true;
        } else if (!h.status_header.empty() && it->name_string().size() == h.status_header.size() &&
                   boost::beast::iequals(it->name_string(), h.status_header)) {
            own = it;
        }
    }
    if (own != res.end())
        res.erase(h.status_header); // every line of that name
    scratch.clear();
    render_head(res.base(), scratch);
    scratch.resize(scratch.size() - 2); // the blank line goes after the added fields
    append_answer_fields(scratch, h, has_date);
    scratch.append("\r\n", 2);
    return {boost::asio::buffer(scratch), boost::asio::buffer(res.body().data(), res.body().size())};
}

std::array<boost::asio::const_buffer, 7> tier_answer_buffers(const tier_entry& e, unsigned version,
                                                             bool keep_alive, std::string_view extra)
{
    namespace asio = boost::asio;
    std::string_view proto = version == 10 ? "HTTP/1.0" : "HTTP/1.1";
    std::string_view connection;
    if (version == 10 && keep_alive)
        connection = "Connection: keep-alive\r\n";
    else if (version != 10 && !keep_alive)
        connection = "Connection: close\r\n";
    return {asio::buffer(proto.data(), proto.size()),
            asio::buffer(e.http1.status_line),
            asio::buffer(e.http1.fields),
            asio::buffer(connection.data(), connection.size()),
            asio::buffer(extra.data(), extra.size()),
            asio::buffer("\r\n", 2),
            asio::buffer(e.record.body)};
}

} // namespace idemgate::gateway::detail
