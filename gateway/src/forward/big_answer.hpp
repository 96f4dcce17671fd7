// SPDX-License-Identifier: Apache-2.0
#pragma once
// Answers too large to record (limits.max_record_body): passed on to the client as they arrive,
// through the connection's answer_sink, while the key stays in flight; settle then keeps a
// status-only record (status, fields, the body's length and SHA-256). One announced over
// limits.max_response_body never reaches the client (502); one that grows over it is cut.
#include "core/exchange.hpp"
#include "upstream/answer_body.hpp"

#include <array>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <chrono>
#include <idemgate/config/config.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <optional>
#include <string>

namespace idemgate::gateway::detail {

// The client's side of an answer written as it arrives; the codec serving the connection
// implements it (HTTP/1.1: the connection loop).
class answer_sink {
public:
    virtual ~answer_sink() = default;
    // Writes the head of h.response (not its body) with the fields every answer gets (request ID,
    // status header, Date), under timeouts.client_write; Connection: close when h.close_after.
    virtual boost::asio::awaitable<boost::system::error_code> write_head(handled& h) = 0;
    // Writes body bytes (empty buffers are skipped) under timeouts.client_write.
    virtual boost::asio::awaitable<boost::system::error_code>
    write(const std::array<boost::asio::const_buffer, 3>& parts) = 0;
    // Writes the body's last bytes: write() unless the codec marks the end itself.
    virtual boost::asio::awaitable<boost::system::error_code>
    write_last(const std::array<boost::asio::const_buffer, 3>& parts)
    {
        co_return co_await write(parts);
    }
    // True when the codec frames the body itself (HTTP/2's DATA frames and END_STREAM): no
    // chunked coding, and no closed connection to mark the end of a body of unknown length.
    virtual bool frames_body() const noexcept { return false; }
    // Resets the connection (RST): the client must not take a cut answer for a whole one.
    virtual void reset() noexcept = 0;
};

struct big_answer {
    // The upstream's status, reason and recordable fields, for the status-only record.
    store::stored_response head;
    // The rest of the body on its connection; null when refused before any byte (502).
    std::unique_ptr<answer_body> rest;
    std::optional<std::uint64_t> length; // the upstream's Content-Length
    // After pass_on: the body bytes read (sent unless the client failed), the body's SHA-256
    // (lower-case hex, "" unless it was read to its end).
    std::uint64_t passed = 0;
    std::string sha256;
    bool upstream_broke = false; // the upstream's answer ended early or timed out: outcome unknown
    bool cut = false;            // the body grew over limits.max_response_body
    // The body's last bytes, written by finish_pass_on once the key has settled (or, cut or
    // broken, the reset of the client's connection); and its framing.
    std::string tail;
    bool tail_pending = false;
    bool chunked = false;
};

// Keeps a key's in-flight lock while its answer is passed on (which may take longer than
// lock_ttl): extends it at once and then every lock_ttl / 3 until destroyed, or until the store
// says the key is no longer this owner's in-flight record.
class lock_keeper {
public:
    // The lock kept: its scope, the owner token it was reserved under, and its lock_ttl.
    struct held_lock {
        std::string tenant;
        std::string key;
        std::string owner_token;
        std::chrono::milliseconds ttl;
    };

    lock_keeper(const boost::asio::any_io_executor& ex, store::session& session, held_lock lock);
    ~lock_keeper();
    lock_keeper(const lock_keeper&) = delete;
    lock_keeper& operator=(const lock_keeper&) = delete;

    struct state;

private:
    std::shared_ptr<state> state_;
};

// Passes on h.response (its head and first bytes) and the rest of *h.big to the client: the
// upstream's Content-Length kept, else chunked (HTTP/1.0: until the connection closes; a codec
// that frames the body itself: as it frames it). Every
// read of the upstream waits at most the route's upstream_response (`timeouts`), every write
// timeouts.client_write. Fills h.written, write_error, body_bytes, close_after. The body's last
// bytes are kept back (big.tail) for finish_pass_on, after the key has settled.
boost::asio::awaitable<void> pass_on(answer_sink& sink, handled& h, const config::config& cfg,
                                     const config::route_timeouts& timeouts);
boost::asio::awaitable<void> finish_pass_on(answer_sink& sink, handled& h);

} // namespace idemgate::gateway::detail
