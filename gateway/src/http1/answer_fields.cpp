// SPDX-License-Identifier: Apache-2.0
#include "http1/answer_fields.hpp"

#include "core/http_date.hpp"
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

} // namespace idemgate::gateway::detail
