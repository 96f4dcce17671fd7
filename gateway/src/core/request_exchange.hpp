// SPDX-License-Identifier: Apache-2.0
#pragma once
// One request's context from the codec that read it to the epilogue that logs it (Pingora's
// per-request CTX, nginx's log phase): the request, the client, the configuration it runs
// under, its IDs and trace, the answer and how it was written. Every codec (HTTP/1.x, HTTP/2)
// fills one per request, hands it to handle_request() (idempotency/idempotency_filter.hpp), and
// ends it with finish_exchange() (state/exchange_epilogue.hpp), which counts, logs and finishes
// the trace the same way for all of them.
#include "core/exchange.hpp"
#include "core/request_trace.hpp"

#include <boost/system/error_code.hpp>
#include <chrono>
#include <cstdint>
#include <idemgate/gateway/request_id.hpp>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::gateway::detail {

struct request_env; // state/generation.hpp
class answer_sink;  // idempotency/big_answer.hpp

struct request_exchange {
    using clock = std::chrono::steady_clock;

    // The live configuration when the request's first byte arrived, kept to its end even if a
    // reload replaces it meanwhile.
    std::shared_ptr<request_env> env;
    // The request as the codec parsed it (its parser's, or its stream's); null while its head
    // has not been read (a request refused before that).
    request_type* req = nullptr;
    const client_info* client = nullptr;
    // The client a trusted peer's X-Forwarded-For or Forwarded named (begin_exchange); "" = the
    // connection's (client->ip). What the access line and the span name.
    std::string client_address;
    request_ids ids;
    std::optional<request_trace> trace; // tracing on: this request's part in a trace
    handled answer;
    // HTTP/1.1: the head as the client sent it and the ID made for it (forwarded with the edits
    // spliced in); empty for HTTP/2, whose upstream head is rendered from the parsed fields.
    received_head received;
    // Where an answer too large to record is written as it arrives (null: refused with 502).
    answer_sink* sink = nullptr;
    std::string* scratch = nullptr; // the connection's buffer for rendered heads
    clock::time_point started;      // when the codec took the request
    std::uint32_t stream = 0;       // the HTTP/2 stream it came on; 0 for HTTP/1.x
    // The codec's own answer to a request it could not read or refused before handling
    // ("" when the request was handled): logged as rejected with this detail.
    std::string_view refused;
    std::uint64_t bytes_out = 0;           // the answer's body bytes written
    boost::system::error_code write_error; // how writing the answer ended

    request_trace* trace_or_null() noexcept { return trace ? &*trace : nullptr; }
    std::string_view client_ip() const noexcept
    {
        if (!client_address.empty())
            return client_address;
        return client ? std::string_view(client->ip) : std::string_view{};
    }

    // Back to a new request's state, keeping the strings' and the answer's storage (the
    // connection reuses one exchange for all its requests). `env` and `req` are set by the codec.
    void clear() noexcept
    {
        req = nullptr;
        client_address.clear();
        ids.request_id.clear();
        ids.generated = false;
        ids.incoming_lines = 0;
        ids.trace_id.clear();
        trace.reset();
        answer.clear();
        received = {};
        refused = {};
        bytes_out = 0;
        write_error.clear();
    }
};

} // namespace idemgate::gateway::detail
