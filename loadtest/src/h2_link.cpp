// SPDX-License-Identifier: Apache-2.0
#include "h2_link.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/ssl/host_name_verification.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <idemgate/common/use_tuple.hpp>
#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace idemgate::loadtest::detail {

namespace {

void rethrow(std::exception_ptr e)
{
    if (e)
        std::rethrow_exception(e);
}

} // namespace

h2_link::h2_link(asio::any_io_executor executor, std::chrono::nanoseconds timeout, asio::ssl::context* tls,
                 const std::string& server_name)
    : executor_(executor), timeout_(timeout), tls_(tls), server_name_(server_name), wake_(executor),
      write_deadline_(executor)
{
}

h2_link::~h2_link()
{
    // Calls no callback: the lanes' requests are not touched.
    nghttp2_session_del(session_);
}

asio::awaitable<exchange_error> h2_link::connect(const asio::ip::tcp::resolver::results_type& endpoints,
                                                 std::string& detail)
{
    if (tls_)
        tls_stream_.emplace(executor_, *tls_);
    else
        stream_.emplace(executor_);
    auto failed = [&](boost::system::error_code ec, std::string why) {
        detail = std::move(why);
        closed_ = true;
        close_socket();
        return exchange_error{ec, exchange_stage::connect};
    };
    tcp().expires_after(timeout_);
    auto [ec, endpoint] = co_await tcp().async_connect(endpoints, use_tuple);
    if (ec)
        co_return failed(ec, "connecting: " + ec.message());
    boost::system::error_code ignored;
    tcp().socket().set_option(asio::ip::tcp::no_delay(true), ignored);
    if (tls_stream_) {
        SSL* ssl = tls_stream_->native_handle();
        static constexpr unsigned char alpn[] = {2, 'h', '2'};
        if (!SSL_set_tlsext_host_name(ssl, server_name_.c_str()) ||
            SSL_set_alpn_protos(ssl, alpn, sizeof alpn))
            co_return failed(asio::error::invalid_argument, "setting up TLS (SNI, ALPN) failed");
        tls_stream_->set_verify_callback(asio::ssl::host_name_verification(server_name_), ignored);
        tcp().expires_after(timeout_);
        auto [hs_ec] = co_await tls_stream_->async_handshake(asio::ssl::stream_base::client, use_tuple);
        constexpr std::string_view enabled = "): is HTTP/2 enabled on its TLS listener?";
        // A server that knows none of the protocols offered may refuse the handshake with an
        // alert (RFC 7301 3.2) rather than choose none.
        if (hs_ec && hs_ec.category() == asio::error::get_ssl_category() &&
            ERR_GET_REASON(static_cast<unsigned long>(hs_ec.value())) ==
                SSL_R_TLSV1_ALERT_NO_APPLICATION_PROTOCOL)
            co_return failed(h2_error::no_alpn_h2,
                             "the server did not choose h2 by ALPN (its alert: no application protocol" +
                                 std::string(enabled));
        if (hs_ec)
            co_return failed(hs_ec, "TLS handshake: " + hs_ec.message());
        const unsigned char* chosen = nullptr;
        unsigned chosen_size = 0;
        SSL_get0_alpn_selected(ssl, &chosen, &chosen_size);
        std::string_view protocol(reinterpret_cast<const char*>(chosen), chosen_size);
        if (protocol != "h2")
            co_return failed(h2_error::no_alpn_h2,
                             "the server did not choose h2 by ALPN (" +
                                 (protocol.empty() ? std::string("it chose no protocol")
                                                   : "it chose \"" + std::string(protocol) + "\"") +
                                 std::string(enabled));
    }
    tcp().expires_never(); // from here, the writer's own deadline and the lanes' waits
    if (!start_session(detail))
        co_return failed(h2_error::protocol, detail);
    started_ = true;
    last_read_ = clock::now();
    auto self = shared_from_this();
    if (tls_stream_) {
        asio::co_spawn(executor_, read_loop(self, *tls_stream_), rethrow);
        asio::co_spawn(executor_, write_loop(self, *tls_stream_), rethrow);
    } else {
        asio::co_spawn(executor_, read_loop(self, *stream_), rethrow);
        asio::co_spawn(executor_, write_loop(self, *stream_), rethrow);
    }
    co_return exchange_error{};
}

void h2_link::fail(boost::system::error_code ec, exchange_stage stage, std::string why)
{
    if (closed_)
        return;
    closed_ = true;
    for (auto& [id, p] : pending_) {
        p->result = exchange_error{ec, stage};
        if (p->detail)
            *p->detail = why;
        p->done = true;
        p->waiter->cancel();
    }
    pending_.clear();
    close_socket();
}

void h2_link::retire()
{
    retired_ = true;
    wake();
}

void h2_link::close_socket() noexcept
{
    if (stream_ || tls_stream_) {
        // No TLS close_notify and no GOAWAY: a client that goes away.
        boost::system::error_code ignored;
        tcp().socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
        tcp().socket().close(ignored);
    }
    write_deadline_.cancel();
    wake();
}

template<class Stream>
asio::awaitable<void> h2_link::read_loop(std::shared_ptr<h2_link> self, Stream& stream)
{
    std::vector<std::uint8_t> buffer(64 * 1024);
    while (!closed_) {
        auto [ec, n] = co_await stream.async_read_some(asio::buffer(buffer), use_tuple);
        if (closed_ || write_timed_out_)
            break; // the writer says why
        if (ec) {
            std::string why = goaway_ ? "the server closed the connection after " + goaway_text_
                              : ec == asio::error::eof || ec == asio::ssl::error::stream_truncated
                                  ? std::string("the server closed the connection")
                                  : "reading from the server: " + ec.message();
            if (!goaway_ && !session_error_.empty())
                why += " (" + session_error_ + ")";
            fail(goaway_ ? make_error_code(h2_error::goaway) : make_error_code(h2_error::closed),
                 exchange_stage::read, why);
            break;
        }
        last_read_ = clock::now();
        auto rv = nghttp2_session_mem_recv(session_, buffer.data(), n);
        if (rv < 0) {
            fail(h2_error::protocol, exchange_stage::read,
                 "the server broke HTTP/2: " + (session_error_.empty()
                                                    ? std::string(nghttp2_strerror(static_cast<int>(rv)))
                                                    : session_error_));
            break;
        }
        wake();
    }
    (void)self;
}

template<class Stream>
asio::awaitable<void> h2_link::write_loop(std::shared_ptr<h2_link> self, Stream& stream)
{
    std::string out;
    while (!closed_) {
        out.clear();
        while (out.size() < 64 * 1024) {
            const std::uint8_t* data = nullptr;
            auto n = nghttp2_session_mem_send(session_, &data);
            if (n < 0) {
                fail(h2_error::protocol, exchange_stage::write,
                     std::string("nghttp2: ") + nghttp2_strerror(static_cast<int>(n)));
                break;
            }
            if (n == 0)
                break;
            out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
        }
        if (closed_)
            break;
        if (!out.empty()) {
            write_deadline_.expires_after(timeout_);
            write_deadline_.async_wait([self](boost::system::error_code ec) {
                if (ec || self->closed_)
                    return;
                self->write_timed_out_ = true;
                boost::system::error_code ignored;
                self->tcp().socket().cancel(ignored);
            });
            auto [ec, n] = co_await asio::async_write(stream, asio::buffer(out), use_tuple);
            write_deadline_.cancel();
            if (ec) {
                if (write_timed_out_)
                    fail(beast::error::timeout, exchange_stage::write,
                         "writing to the server did not finish within --timeout (it does not read)");
                else
                    fail(ec, exchange_stage::write, "writing to the server: " + ec.message());
                break;
            }
            continue;
        }
        if ((goaway_ || retired_) && pending_.empty()) {
            closed_ = true; // done with it: no stream left to answer
            close_socket();
            break;
        }
        if (!nghttp2_session_want_read(session_) && !nghttp2_session_want_write(session_)) {
            // nghttp2 ended the session: a GOAWAY it sent after the server broke the protocol,
            // or the server's GOAWAY with streams it will not answer.
            std::string why = goaway_ ? goaway_text_ : "the server broke HTTP/2";
            if (!goaway_ && !session_error_.empty())
                why += " (" + session_error_ + ")";
            if (!sent_goaway_.empty())
                why += "; idemgate-loadtest ended the connection with GOAWAY " + sent_goaway_;
            fail(goaway_ ? h2_error::goaway : h2_error::protocol, exchange_stage::read, why);
            break;
        }
        // Woken by cancel(); a timer that never expires costs no timer system call.
        wake_.expires_at(asio::steady_timer::time_point::max());
        co_await wake_.async_wait(use_tuple);
    }
}

} // namespace idemgate::loadtest::detail
