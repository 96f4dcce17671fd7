// SPDX-License-Identifier: Apache-2.0
#pragma once
// Reading a TCP socket without a read that finds nothing: `ready_read_some`, Asio's
// async_read_some with nginx's rule for when to try a read at once.
//
// Asio 1.81's reactor tries every read at once ("speculatively") and waits for epoll only when
// that read finds nothing, except after end of file. So each wait for a peer's next message (a
// client's next request, an upstream's answer, Redis's next reply) costs a recv that fails with
// EAGAIN before the wait. nginx (and Netty) read only once epoll said the socket is readable,
// after a read that emptied the socket's queue: a byte that arrives later raises a new edge.
//
// Which read emptied the queue the kernel says: with TCP_INQ on (enable_read_hints, once per
// socket) every recvmsg carries the bytes still queued after it, and 1 when nothing is queued but
// the peer's FIN came (so a FIN that came with the last bytes is not mistaken for an empty queue:
// it raises no later edge). Here such a read with 0 left tells Asio's reactor the socket is
// exhausted, as Asio itself does at end of file: the next read on that socket (this function's or
// Asio's own, Beast's) then waits for epoll, and any readiness epoll reports before it lets it try
// at once again. The reactor makes both moves under the socket's lock, so a byte arriving between
// the two reads is never missed. A socket without TCP_INQ (its recvmsg carries no count) is never
// marked: it reads as with async_read_some.
//
// The same mark answers, without a system call, whether an idle socket has stayed quiet
// (quiet_since_drained): while it is off, epoll has reported nothing for the socket since a read
// emptied it (no byte, no FIN, no error), since any such report turns it back on.
//
// The operation is Asio 1.81's reactive receive operation with that one change, so it is built
// only where that is what tcp::socket uses (Boost 1.81, the epoll reactor, Linux); elsewhere
// (another Boost, the io_uring backend) ready_read_some is async_read_some,
// enable_read_hints does nothing and quiet_since_drained is always false. `ready_read_vendored`
// says which.
#include <boost/asio/async_result.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>
#include <boost/version.hpp>
#include <cstddef>
#include <utility>

#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) &&                                              \
    !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT) && !defined(BOOST_ASIO_HAS_IOCP) &&                         \
    !defined(BOOST_ASIO_WINDOWS_RUNTIME) && defined(__linux__)
#define IDEMGATE_READY_READ_VENDORED 1
#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_cont_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/non_const_lvalue.hpp>
#include <boost/asio/detail/reactive_socket_service.hpp>
#include <boost/asio/detail/reactor_op.hpp>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#endif

namespace idemgate {

#if defined(IDEMGATE_READY_READ_VENDORED)
inline constexpr bool ready_read_vendored = true;

namespace ready_read_detail {

namespace ad = boost::asio::detail;
using tcp_socket = boost::asio::ip::tcp::socket;

// The socket's service and implementation, protected in Asio's classes: reached through
// pointers to members named in derived classes, which the language allows.
struct socket_access : tcp_socket {
    static constexpr auto impl() noexcept { return &socket_access::impl_; }
};
struct service_access : ad::reactive_socket_service_base {
    static constexpr auto start() noexcept { return &service_access::start_op; }
    using cancellation = service_access::reactor_op_cancellation;
};

// Asio 1.81's reactive_socket_recv_op for one buffer, read with recvmsg: a read that leaves the
// socket's queue empty by TCP_INQ's count (or ends its reads: end of file, an error) is
// done_and_exhausted.
template<class Handler, class IoExecutor>
class recv_op : public ad::reactor_op {
public:
    BOOST_ASIO_DEFINE_HANDLER_PTR(recv_op);

    recv_op(const boost::system::error_code& success_ec, ad::socket_type socket,
            const boost::asio::mutable_buffer& buffer, Handler& handler, const IoExecutor& io_ex)
        : reactor_op(success_ec, &recv_op::do_perform, &recv_op::do_complete), socket_(socket),
          buffer_(buffer), handler_(static_cast<Handler&&>(handler)), work_(handler_, io_ex)
    {
    }

    static status do_perform(reactor_op* base)
    {
        auto* o = static_cast<recv_op*>(base);
        for (;;) {
            iovec iov{o->buffer_.data(), o->buffer_.size()};
            alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
            msghdr msg{};
            msg.msg_iov = &iov;
            msg.msg_iovlen = 1;
            msg.msg_control = control;
            msg.msg_controllen = sizeof control;
            const ssize_t n = ::recvmsg(o->socket_, &msg, 0);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                if (errno == EWOULDBLOCK || errno == EAGAIN)
                    return not_done;
                o->ec_ = boost::system::error_code(errno, boost::asio::error::get_system_category());
                o->bytes_transferred_ = 0;
                return done_and_exhausted; // as Asio's: a failed read ends the socket's reads
            }
            o->bytes_transferred_ = static_cast<std::size_t>(n);
            if (n == 0) {
                o->ec_ = boost::asio::error::eof;
                return done_and_exhausted;
            }
            o->ec_ = boost::system::error_code();
            return queued_after(msg) == 0 ? done_and_exhausted : done;
        }
    }

    // What TCP_INQ's count says is left after the read: 0 only when nothing is (no FIN either);
    // -1 without a count.
    static int queued_after(msghdr& msg) noexcept
    {
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ) {
                int left = -1;
                std::memcpy(&left, CMSG_DATA(c), sizeof left);
                return left;
            }
        return -1;
    }

    static void do_complete(void* owner, ad::operation* base, const boost::system::error_code& /*ec*/,
                            std::size_t /*bytes_transferred*/)
    {
        // As Asio's own: the handler is moved out and the operation's memory freed before the
        // upcall (a part of the handler may own that memory).
        auto* o = static_cast<recv_op*>(base);
        ptr p = {boost::asio::detail::addressof(o->handler_), o, o};
        ad::handler_work<Handler, IoExecutor> w(
            static_cast<ad::handler_work<Handler, IoExecutor>&&>(o->work_));
        ad::binder2<Handler, boost::system::error_code, std::size_t> handler(o->handler_, o->ec_,
                                                                             o->bytes_transferred_);
        p.h = boost::asio::detail::addressof(handler.handler_);
        p.reset();
        if (owner) {
            ad::fenced_block b(ad::fenced_block::half);
            w.complete(handler, handler.handler_);
        }
    }

private:
    ad::socket_type socket_;
    boost::asio::mutable_buffer buffer_;
    Handler handler_;
    ad::handler_work<Handler, IoExecutor> work_;
};

// As reactive_socket_service_base::async_receive (no flags) with recv_op.
template<class Handler>
void start_receive(tcp_socket& socket, const boost::asio::mutable_buffer& buffer, Handler& handler)
{
    auto& io = socket.*socket_access::impl();
    auto& service = io.get_service();
    auto& impl = io.get_implementation();
    const auto& io_ex = io.get_executor();
    using op = recv_op<Handler, std::decay_t<decltype(io_ex)>>;
    const bool is_continuation = boost_asio_handler_cont_helpers::is_continuation(handler);
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    typename op::ptr p = {boost::asio::detail::addressof(handler), op::ptr::allocate(handler), 0};
    p.p = new (p.v) op(boost::system::error_code(), impl.socket_, buffer, handler, io_ex);
    if (slot.is_connected()) {
        auto& reactor = boost::asio::use_service<ad::reactor>(service.context());
        p.p->cancellation_key_ = &slot.template emplace<service_access::cancellation>(
            &reactor, &impl.reactor_data_, impl.socket_, ad::reactor::read_op);
    }
    (service.*service_access::start())(impl, ad::reactor::read_op, p.p, is_continuation, true,
                                       buffer.size() == 0);
    p.v = p.p = 0;
}

struct initiate_receive {
    tcp_socket* socket;
    using executor_type = tcp_socket::executor_type;
    executor_type get_executor() const noexcept { return socket->get_executor(); }

    template<class Handler>
    void operator()(Handler&& handler, const boost::asio::mutable_buffer& buffer) const
    {
        ad::non_const_lvalue<Handler> handler2(handler);
        start_receive(*socket, buffer, handler2.value);
    }
};

} // namespace ready_read_detail

// Turns on TCP_INQ for `socket` (open), so that ready_read_some knows when a read emptied it; false
// when the kernel refuses (then its reads are as async_read_some's).
inline bool enable_read_hints(boost::asio::ip::tcp::socket& socket) noexcept
{
    const int on = 1;
    return ::setsockopt(socket.native_handle(), SOL_TCP, TCP_INQ, &on, sizeof on) == 0;
}

// async_read_some on a plain TCP socket, whose read after one that emptied the socket waits for
// readiness.
template<class Token>
auto ready_read_some(boost::asio::ip::tcp::socket& socket, const boost::asio::mutable_buffer& buffer,
                     Token&& token)
{
    return boost::asio::async_initiate<Token, void(boost::system::error_code, std::size_t)>(
        ready_read_detail::initiate_receive{&socket}, token, buffer);
}

// True when the last read of `socket` (ready_read_some, with its hints on) emptied it and its
// reactor has reported no readiness for it since: no byte, FIN or error that the event loop has
// polled. Not a system call: the reactor's own mark, read under the socket's lock as the reactor
// reads it. False for a socket no such read emptied (never read, read by async_read_some, a read
// that left bytes or a FIN behind, no TCP_INQ), or closed. What the kernel received since the
// event loop last polled epoll is not seen: a caller that must not miss it asks the socket itself.
bool quiet_since_drained(boost::asio::ip::tcp::socket& socket) noexcept;
#else
inline constexpr bool ready_read_vendored = false;

inline bool enable_read_hints(boost::asio::ip::tcp::socket&) noexcept
{
    return false;
}

template<class Token>
auto ready_read_some(boost::asio::ip::tcp::socket& socket, const boost::asio::mutable_buffer& buffer,
                     Token&& token)
{
    return socket.async_read_some(buffer, std::forward<Token>(token));
}

inline bool quiet_since_drained(boost::asio::ip::tcp::socket&) noexcept
{
    return false;
}
#endif

// Any other stream (TLS): its own async_read_some.
template<class Stream, class Token>
auto ready_read_some(Stream& stream, const boost::asio::mutable_buffer& buffer, Token&& token)
{
    return stream.async_read_some(buffer, std::forward<Token>(token));
}

} // namespace idemgate
