// SPDX-License-Identifier: Apache-2.0
#include "forward/big_answer.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <idemgate/common/digest.hpp>
#include <openssl/evp.h>

namespace idemgate::gateway::detail {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// SHA-256 over the pieces of a body.
class body_digest {
public:
    body_digest() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
    ~body_digest() { EVP_MD_CTX_free(ctx_); }
    body_digest(const body_digest&) = delete;
    body_digest& operator=(const body_digest&) = delete;
    void update(std::string_view bytes) { EVP_DigestUpdate(ctx_, bytes.data(), bytes.size()); }
    std::string hex()
    {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        EVP_DigestFinal_ex(ctx_, digest, &n);
        std::string out;
        append_hex(out, digest, n);
        return out;
    }

private:
    EVP_MD_CTX* ctx_;
};

// Writes one piece of the body (chunked, as h.big says: as a chunk; `last`: then the last chunk).
asio::awaitable<error_code> write_piece(answer_sink& sink, handled& h, std::string_view piece, bool last)
{
    const bool chunked = h.big->chunked;
    char size_line[24];
    int n =
        chunked && !piece.empty() ? std::snprintf(size_line, sizeof size_line, "%zx\r\n", piece.size()) : 0;
    std::string_view end = !chunked ? "" : last ? (piece.empty() ? "0\r\n\r\n" : "\r\n0\r\n\r\n") : "\r\n";
    std::array<asio::const_buffer, 3> parts{asio::buffer(size_line, static_cast<std::size_t>(n)),
                                            asio::buffer(piece.data(), piece.size()),
                                            asio::buffer(end.data(), end.size())};
    error_code ec;
    if (last)
        ec = co_await sink.write_last(parts);
    else
        ec = co_await sink.write(parts);
    if (!ec)
        h.body_bytes += piece.size();
    co_return ec;
}

} // namespace

struct lock_keeper::state {
    explicit state(const asio::any_io_executor& ex) : timer(ex) {}
    asio::steady_timer timer;
    bool stopped = false;
};

namespace {

// By value: the request that started it may end while a store call is still out.
asio::awaitable<void> keep_lock(std::shared_ptr<lock_keeper::state> st, store::session* session,
                                lock_keeper::held_lock lock)
{
    const auto every = std::max(lock.ttl / 3, std::chrono::milliseconds(1));
    for (;;) {
        const store::scope scope{lock.tenant, lock.key};
        auto ec = co_await session->extend(scope, lock.owner_token, lock.ttl);
        if (ec || st->stopped)
            co_return;
        st->timer.expires_after(every);
        auto [wait_ec] = co_await st->timer.async_wait(asio::as_tuple(asio::use_awaitable));
        if (wait_ec || st->stopped)
            co_return;
    }
}

} // namespace

lock_keeper::lock_keeper(const asio::any_io_executor& ex, store::session& session, held_lock lock)
    : state_(std::make_shared<state>(ex))
{
    asio::co_spawn(ex, keep_lock(state_, &session, std::move(lock)), asio::detached);
}

lock_keeper::~lock_keeper()
{
    state_->stopped = true;
    state_->timer.cancel();
}

asio::awaitable<void> pass_on(answer_sink& sink, handled& h, const config::config& cfg,
                              const config::route_timeouts& timeouts)
{
    auto& big = *h.big;
    auto& res = h.response;
    std::string piece = std::move(res.body());
    res.body().clear();
    res.erase(http::field::content_length);
    res.erase(http::field::transfer_encoding);
    const bool chunked = !big.length && res.version() >= 11 && !sink.frames_body();
    if (big.length)
        res.content_length(*big.length);
    else if (chunked)
        res.set(http::field::transfer_encoding, "chunked");
    else if (!sink.frames_body())
        h.close_after = true; // HTTP/1.0: the end of the body is the end of the connection
    big.chunked = chunked;
    h.written = true;
    body_digest digest;
    error_code ec = co_await sink.write_head(h);
    bool done = false;
    for (;;) {
        if (!piece.empty()) {
            big.passed += piece.size();
            if (big.passed > cfg.limits.max_response_body) {
                big.cut = true;
                break;
            }
            digest.update(piece);
        }
        if (done) {
            // The last bytes wait until the key has settled: a client that has the whole answer
            // and retries finds the record.
            big.tail = std::move(piece);
            break;
        }
        if (!piece.empty() && !ec)
            ec = co_await write_piece(sink, h, piece, false);
        // A client that went away stops the answer: the upstream's connection closes with it.
        if (ec)
            break;
        auto rec = co_await big.rest->read_some(
            piece, done, std::chrono::duration_cast<std::chrono::milliseconds>(timeouts.upstream_response));
        if (rec) {
            big.upstream_broke = true;
            break;
        }
    }
    big.rest.reset(); // closes the upstream connection
    if (big.cut || big.upstream_broke) {
        // The client must not take a cut answer for a whole one: its connection is reset, once
        // the key has settled (finish_pass_on).
        big.tail_pending = true;
        if (!ec)
            ec = asio::error::connection_reset;
    } else if (done && !ec) {
        big.sha256 = digest.hex();
        big.tail_pending = true;
    }
    h.write_error = ec;
    if (ec)
        h.close_after = true;
}

asio::awaitable<void> finish_pass_on(answer_sink& sink, handled& h)
{
    auto& big = *h.big;
    if (!big.tail_pending)
        co_return;
    big.tail_pending = false;
    if (big.cut || big.upstream_broke) {
        sink.reset();
        co_return;
    }
    h.write_error = co_await write_piece(sink, h, big.tail, true);
    if (h.write_error)
        h.close_after = true;
}

} // namespace idemgate::gateway::detail
