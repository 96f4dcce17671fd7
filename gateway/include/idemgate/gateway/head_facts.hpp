// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the reading of a request's or an answer's head tells its caller about the message, the
// same whichever reader read it: the plain reader (plain_head.hpp) fills it from the bytes, Beast's
// parser through facts_of once its head is done. Callers read these facts, never which parser ran.
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>

namespace idemgate::gateway {

struct head_facts {
    std::optional<std::uint64_t> content_length; // as announced; none: no Content-Length
    bool chunked = false;                        // the body is chunked
    bool keep_alive = false;                     // as Beast's parser.keep_alive() would say
    bool body_pending = false;                   // body bytes are still to read after the head
    std::size_t header_fields = 0;               // fields in the head (trailers come after them)
};

// The facts of a head Beast's parser read (parser.is_header_done()).
template<class Parser>
head_facts facts_of(const Parser& parser)
{
    head_facts facts;
    if (auto length = parser.content_length())
        facts.content_length = *length;
    facts.chunked = parser.chunked();
    facts.keep_alive = parser.keep_alive();
    facts.body_pending = !parser.is_done();
    const auto& m = parser.get();
    facts.header_fields = static_cast<std::size_t>(std::distance(m.begin(), m.end()));
    return facts;
}

} // namespace idemgate::gateway
