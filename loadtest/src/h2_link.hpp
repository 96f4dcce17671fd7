// SPDX-License-Identifier: Apache-2.0
#pragma once
// One HTTP/2 connection of the load tester, from its connect to its close: the socket (plain for
// h2c with prior knowledge, TLS with ALPN "h2" otherwise), an nghttp2 client session, a reader
// feeding the session and a writer sending what it produces, on the connection's thread. The
// lanes of an h2_client_connection submit requests here and wait for their stream to close.
// A link that fails (GOAWAY, a reset, a protocol error, a closed socket, a write past its
// deadline) fails every stream it still carries, each with a line naming what happened; the
// next request opens a new link.
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <chrono>
#include <cstdint>
#include <idemgate/loadtest/answer_check.hpp>
#include <idemgate/loadtest/h2_client.hpp>
#include <idemgate/loadtest/http_client.hpp>
#include <idemgate/loadtest/request_template.hpp>
#include <map>
#include <memory>
#include <nghttp2/nghttp2.h>
#include <optional>
#include <string>
#include <vector>

namespace idemgate::loadtest::detail {

namespace asio = boost::asio;
namespace beast = boost::beast;

// One request in flight: where its answer goes and how it ended. Lives in the waiting lane's
// frame; the link forgets it when the stream closes, the lane gives up, or the link fails.
struct h2_pending {
    const request_fields* req = nullptr;
    response* res = nullptr;
    exchange_bytes* bytes = nullptr;
    asio::steady_timer* waiter = nullptr; // cancelled when the stream is done
    std::string* detail = nullptr;        // what went wrong, for the report
    std::size_t body_sent = 0;
    exchange_error result;
    bool done = false;
    bool interim = false;    // inside a 1xx answer's fields
    bool has_status = false; // the final answer's :status arrived
    bool final_head = false; // the final answer's fields are complete (later fields: trailers)
    bool too_large = false;  // the body passed http_client_connection::body_limit: reset
    bool reset_by_server = false;
    bool refused = false; // beyond the last stream of the server's GOAWAY: not processed (RFC 9113 6.8)
    std::uint32_t reset_code = 0;
    int invalid = 0; // nghttp2's error for an invalid frame on the stream
};

class h2_link : public std::enable_shared_from_this<h2_link> {
public:
    using clock = std::chrono::steady_clock;

    h2_link(asio::any_io_executor executor, std::chrono::nanoseconds timeout, asio::ssl::context* tls,
            const std::string& server_name);
    ~h2_link();
    h2_link(const h2_link&) = delete;
    h2_link& operator=(const h2_link&) = delete;

    // Connects (TLS with ALPN h2 when a context was given), starts the session and the reader and
    // writer. `detail` says why it failed.
    asio::awaitable<exchange_error> connect(const asio::ip::tcp::resolver::results_type& endpoints,
                                            std::string& detail);
    // Not failed, no GOAWAY received, stream IDs left.
    bool open_for_streams() const noexcept { return started_ && !closed_ && !goaway_ && !exhausted_; }
    // Submits the request on a new stream; its id, or a negative nghttp2 error (the link then
    // takes no more streams).
    std::int32_t submit(h2_pending& p);
    // The lane stopped waiting for stream `id`: reset it (CANCEL) and forget its request.
    void forget(std::int32_t id);
    // Nothing was read for at least `quiet` (a server that stopped answering).
    bool silent_for(std::chrono::nanoseconds quiet) const noexcept
    {
        return clock::now() - last_read_ >= quiet;
    }
    // Fails every stream still open with `why` and closes the socket; `ec` is what they return.
    void fail(boost::system::error_code ec, exchange_stage stage, std::string why);
    // Closes the link once its last stream is done (a retired link); at once when it has none.
    void retire();

private:
    friend struct h2_link_callbacks;

    template<class Stream>
    asio::awaitable<void> read_loop(std::shared_ptr<h2_link> self, Stream& stream);
    template<class Stream>
    asio::awaitable<void> write_loop(std::shared_ptr<h2_link> self, Stream& stream);
    beast::tcp_stream& tcp() noexcept { return tls_stream_ ? tls_stream_->next_layer() : *stream_; }
    bool start_session(std::string& detail);
    void wake() { wake_.cancel(); }
    void finish_stream(std::int32_t id, std::uint32_t error_code);
    void close_socket() noexcept;
    // A GOAWAY received or the link retired, and no stream left: close quietly.
    void close_if_done();

    asio::any_io_executor executor_;
    std::chrono::nanoseconds timeout_;
    asio::ssl::context* tls_;
    std::string server_name_;
    std::optional<beast::tcp_stream> stream_;                        // h2c
    std::optional<beast::ssl_stream<beast::tcp_stream>> tls_stream_; // h2 over TLS
    nghttp2_session* session_ = nullptr;
    std::map<std::int32_t, h2_pending*> pending_;
    std::vector<nghttp2_nv> nva_;       // the fields of the request being submitted
    asio::steady_timer wake_;           // the writer waits on it; cancel() wakes it
    asio::steady_timer write_deadline_; // cancels the socket when a write takes longer than the timeout
    clock::time_point last_read_;
    bool started_ = false;
    bool closed_ = false;
    bool goaway_ = false;
    bool exhausted_ = false;
    bool retired_ = false;
    bool write_timed_out_ = false;
    std::string goaway_text_;   // "the server sent GOAWAY (...)"
    std::string session_error_; // nghttp2's own account of a connection error it detected
    std::string sent_goaway_;   // the code and reason of the GOAWAY nghttp2 sent, if it did
};

} // namespace idemgate::loadtest::detail
