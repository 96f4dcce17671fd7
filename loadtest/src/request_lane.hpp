// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the runner drives: a lane sends one request at a time and waits for its answer. Over
// HTTP/1.1 a lane is a keep-alive connection of its own; over HTTP/2 the --streams lanes of a
// connection share it, each with a stream in flight. Every check and mode sees the same answers.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <idemgate/loadtest/answer_check.hpp>
#include <idemgate/loadtest/http_client.hpp>
#include <idemgate/loadtest/options.hpp>
#include <idemgate/loadtest/request_template.hpp>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::loadtest::detail {

class request_lane {
public:
    virtual ~request_lane() = default;
    // Sends `target`'s request for `key` and reads its answer into `res`.
    virtual asio::awaitable<exchange_error> exchange(const request_template& target, std::string_view key,
                                                     response& res, exchange_bytes& bytes) = 0;
    // What the last failed exchange ran into, in words ("the server sent GOAWAY (...)").
    virtual std::string failure(const exchange_error& err) const;
    virtual void close() noexcept = 0;
};

// The lanes of one connection, on `executor`: one over HTTP/1.1, --streams over HTTP/2.
std::vector<std::unique_ptr<request_lane>>
connection_lanes(asio::any_io_executor executor, const options& o,
                 const asio::ip::tcp::resolver::results_type& endpoints, asio::ssl::context* tls);

} // namespace idemgate::loadtest::detail
