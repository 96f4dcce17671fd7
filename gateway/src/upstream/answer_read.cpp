// SPDX-License-Identifier: Apache-2.0
#include "upstream/answer_read.hpp"

#include <cstring>
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

// An answer of the common shape read without Beast's parser: its head into `result.response`
// with the body bytes already in `buffer`. Returns the number of body bytes still to come, or
// nothing when the head is of another shape.
std::optional<std::size_t> take_plain_answer(beast::flat_buffer& buffer, std::size_t head_end,
                                             std::size_t header_limit, std::uint64_t max_body,
                                             upstream_result& result, bool& keep_alive)
{
    auto& res = result.response;
    if (head_end == 0 || res.begin() != res.end())
        return std::nullopt;
    plain_answer head;
    const auto* bytes = static_cast<const char*>(buffer.data().data());
    if (!read_plain_answer(std::string_view(bytes, head_end), header_limit, max_body, res.base(), head))
        return std::nullopt;
    keep_alive = head.keep_alive;
    const auto length = static_cast<std::size_t>(head.content_length);
    const auto buffered = std::min(length, buffer.size() - head_end);
    auto& body = res.body();
    body.reserve(length);
    body.assign(bytes + head_end, buffered);
    buffer.consume(head_end + buffered);
    return length - buffered;
}

} // namespace idemgate::gateway::detail
