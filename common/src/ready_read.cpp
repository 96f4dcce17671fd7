// SPDX-License-Identifier: Apache-2.0
// quiet_since_drained: the epoll reactor's mark that a socket's reads must wait for epoll, read
// where ready_read_some (ready_read.hpp) sets it.
#include <idemgate/common/ready_read.hpp>

#if defined(IDEMGATE_READY_READ_VENDORED)
#include <boost/asio/detail/conditionally_enabled_mutex.hpp>
#include <boost/asio/detail/epoll_reactor.hpp>
#include <type_traits>

namespace idemgate {

namespace ready_read_detail {
namespace {

static_assert(std::is_same_v<ad::reactor, ad::epoll_reactor>, "the vendored read runs on the epoll reactor");

using descriptor_state = ad::epoll_reactor::descriptor_state;
using flags_member = bool (descriptor_state::*)[ad::epoll_reactor::max_ops];
using mutex_member = ad::conditionally_enabled_mutex descriptor_state::*;

// Asio 1.81's epoll_reactor::descriptor_state keeps, per kind of operation, whether the next one
// may be tried at once (try_speculative_) and the lock it is read and written under (mutex_), both
// private. Their pointers to members are named here as template arguments of an explicit
// instantiation, where the language does not check access ([temp.spec.general]); the friend
// function each instantiation defines hands the pointer out.
template<class Member, Member Pointer, class Tag>
struct member_key {
    friend Member member_of(Tag) noexcept { return Pointer; }
};
struct flags_tag {};
struct mutex_tag {};
flags_member member_of(flags_tag) noexcept;
mutex_member member_of(mutex_tag) noexcept;
template struct member_key<flags_member, &descriptor_state::try_speculative_, flags_tag>;
template struct member_key<mutex_member, &descriptor_state::mutex_, mutex_tag>;

} // namespace
} // namespace ready_read_detail

bool quiet_since_drained(boost::asio::ip::tcp::socket& socket) noexcept
{
    using namespace ready_read_detail;
    descriptor_state* state = (socket.*socket_access::impl()).get_implementation().reactor_data_;
    if (state == nullptr)
        return false; // closed
    // The reactor turns the mark off when a read empties the socket (the vendored read's
    // done_and_exhausted, as Asio's at end of file) and back on whenever epoll reports the socket
    // readable, in error or hung up (descriptor_state::perform_io), both under this lock. A socket
    // starts with it on (register_descriptor).
    ad::conditionally_enabled_mutex::scoped_lock lock(state->*member_of(mutex_tag{}));
    return !(state->*member_of(flags_tag{}))[ad::epoll_reactor::read_op];
}

} // namespace idemgate
#endif
