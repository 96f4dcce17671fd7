// SPDX-License-Identifier: Apache-2.0
#include "upstream/answer_read.hpp"

#include <algorithm>
#include <cstring>
#include <idemgate/gateway/head_facts.hpp>
#include <idemgate/gateway/plain_head.hpp>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

// The checks on an answer's head that Beast does not make; may insert the SP before an absent
// reason phrase into `buffer` (and move `scan.end` past it).
response_violation vet_head(beast::flat_buffer& buffer, head_scan& scan)
{
    const auto head_end = scan.end;
    if (head_end == 0)
        return response_violation::none; // too long: the parser refuses it
    std::string_view bytes(static_cast<const char*>(buffer.data().data()), buffer.size());
    auto head = bytes.substr(0, head_end);
    // Folded lines were looked for with the end (most heads have none).
    if (scan.folded)
        if (auto v = check_response_head(head); v != response_violation::none)
            return v;
    if (lacks_reason_separator(head)) {
        std::string fixed;
        fixed.reserve(bytes.size() + 1);
        fixed.append(bytes.substr(0, reason_separator_at))
            .append(" ")
            .append(bytes.substr(reason_separator_at));
        buffer.consume(buffer.size());
        auto space = buffer.prepare(fixed.size());
        std::memcpy(space.data(), fixed.data(), fixed.size());
        buffer.commit(fixed.size());
        ++scan.end;
    }
    return response_violation::none;
}

bool take_plain_answer(beast::flat_buffer& buffer, std::size_t head_end,
                       http::response<http::string_body, span_fields>& res, answer_read& out)
{
    if (head_end == 0 || res.begin() != res.end())
        return false;
    const auto* bytes = static_cast<const char*>(buffer.data().data());
    const auto& limits = *out.limits;
    const head_limits plain{limits.max_response_header_bytes,
                            std::min(limits.max_record_body, limits.max_response_body)};
    if (!read_plain_answer(std::string_view(bytes, head_end), plain, res.base(), out.facts))
        return false;
    buffer.consume(head_end);
    return true;
}

parsed_head take_parsed_answer(beast::flat_buffer& buffer, bool last_interim, upstream_result& result,
                               answer_read& out)
{
    const auto& limits = *out.limits;
    const bool head_request = out.head_request;
    out.seen_status =
        arrived_final_status(std::string_view(static_cast<const char*>(buffer.data().data()), buffer.size()));
    out.parser = make_recycled<parser_type>();
    auto& p = *out.parser;
    p.body_limit(boost::none); // the sizes are checked here, with the answer's head at hand
    p.header_limit(limits.max_response_header_bytes);
    if (head_request)
        p.skip(true);
    // The whole head is buffered (or more than the limit, which the parser refuses).
    buffer.consume(p.put(buffer.data(), out.ec));
    if (!out.ec && !p.is_header_done())
        out.ec = http::error::header_limit;
    const unsigned status = p.get().result_int();
    if (p.is_header_done() && status >= 200)
        out.final_status = status;
    if (out.ec)
        return parsed_head::done;
    if (status < 200) {
        if (status == 101 || last_interim) {
            // No Upgrade was forwarded, so a 101 (or an endless run of 1xx) is a protocol error.
            out.ec = http::error::bad_version;
            return parsed_head::done;
        }
        return parsed_head::interim;
    }
    out.facts = facts_of(p);
    if (has_body(status, head_request))
        out.refused = check_response_framing(p.get());
    if (out.refused != response_violation::none)
        return parsed_head::done;
    const auto& announced = out.facts.content_length;
    if (out.facts.body_pending && announced && *announced > limits.max_response_body) {
        out.announced_too_large = true;
        return parsed_head::done;
    }
    if (out.facts.body_pending && !(announced && *announced <= limits.max_record_body)) {
        out.by_piece = true;
        return parsed_head::done;
    }
    // Read in full as a plain answer is: its head moved out of the parser, its body read after it.
    result.response = std::move(p.get());
    return parsed_head::in_full;
}

} // namespace idemgate::gateway::detail
