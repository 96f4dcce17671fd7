// SPDX-License-Identifier: Apache-2.0
#pragma once
// The rest of an upstream answer too large to record (limits.max_record_body), still on its
// connection: read piece by piece as the client is written to (idempotency/big_answer.hpp).
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <chrono>
#include <string>

namespace idemgate::gateway {

class answer_body {
public:
    virtual ~answer_body() = default;
    // Replaces `out` with the next bytes of the body, each read under `timeout`; `done`: the
    // body has ended (`out` may hold its last bytes). The connection is closed once the body
    // ends or this object goes, never pooled again.
    virtual boost::asio::awaitable<boost::system::error_code>
    read_some(std::string& out, bool& done, std::chrono::milliseconds timeout) = 0;
};

} // namespace idemgate::gateway
