// SPDX-License-Identifier: Apache-2.0
#pragma once
// The lazy per-phase deadline of a client connection (http_connection_impl.hpp).
#include <algorithm>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

namespace idemgate::gateway::detail {

// A deadline for one phase of a connection (waiting for a request, reading its header or body,
// writing the answer). Beast's tcp_stream expiry closes the socket, so after it fires no 408
// can be sent; this one only cancels the pending operation and leaves the socket open
// for the answer.
//
// It is lazy, so that a request does not cost timer system calls: arming stores the due time,
// and one timer wait per connection stays pending, firing at most every `tick`; when it fires
// it cancels the operation if the armed phase is past due, or waits again (until the due time or
// the next tick). Re-arming every request and cancelling at every phase's end (the obvious way)
// makes each request re-program the thread's timerfd about once. The state is shared with the timer's
// handler, which may run after the connection is gone.
class deadline {
public:
    using clock = std::chrono::steady_clock;
    static constexpr std::chrono::milliseconds tick{1000};

    explicit deadline(const boost::asio::any_io_executor& ex) : state_(std::make_shared<state>(ex)) {}
    ~deadline()
    {
        state_->closed = true;
        state_->timer.cancel();
    }
    deadline(const deadline&) = delete;
    deadline& operator=(const deadline&) = delete;

    void arm(boost::asio::ip::tcp::socket& socket, std::chrono::milliseconds timeout)
    {
        auto& st = *state_;
        st.fired = false;
        st.armed = true;
        st.socket = &socket;
        auto now = clock::now();
        st.due = now + timeout;
        // A pending wait that ends by the due time checks it; otherwise (none pending, or a
        // timeout shorter than the pending wait) start one.
        if (!st.waiting || st.wakes > st.due)
            start(state_, std::min(st.due, now + tick));
    }
    void disarm() noexcept { state_->armed = false; }
    bool fired() const noexcept { return state_->fired; }

private:
    struct state {
        explicit state(const boost::asio::any_io_executor& ex) : timer(ex) {}
        boost::asio::steady_timer timer;
        boost::asio::ip::tcp::socket* socket = nullptr;
        clock::time_point due{};
        clock::time_point wakes{}; // when the pending wait ends
        std::uint64_t generation = 0;
        bool waiting = false;
        bool armed = false;
        bool fired = false;
        bool closed = false;
    };

    static void start(const std::shared_ptr<state>& st, clock::time_point at)
    {
        auto generation = ++st->generation;
        st->waiting = true;
        st->wakes = at;
        st->timer.expires_at(at);
        st->timer.async_wait([st, generation](const boost::system::error_code& ec) {
            if (generation != st->generation)
                return; // replaced by a later start()
            st->waiting = false;
            if (ec || st->closed || !st->armed)
                return; // the next arm() starts a wait again
            auto now = clock::now();
            if (now >= st->due) {
                st->fired = true;
                st->armed = false;
                boost::system::error_code ignored;
                st->socket->cancel(ignored);
                return;
            }
            start(st, std::min(st->due, now + tick));
        });
    }

    std::shared_ptr<state> state_;
};

} // namespace idemgate::gateway::detail
