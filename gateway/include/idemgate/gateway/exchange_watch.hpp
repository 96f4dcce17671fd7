// SPDX-License-Identifier: Apache-2.0
#pragma once
// The deadline of the exchanges one upstream pool runs (the gateway's upstream exchange).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <memory>

namespace idemgate::gateway {

// One timer for every exchange in flight on a pool, instead of Beast's tcp_stream arming and
// cancelling a timer around each read and write (two timer operations per request, each a
// locked timer-queue update). An exchange links an `entry` (its socket and due time) while it
// runs; the timer waits for the earliest due time and, when it comes, shuts down and cancels the
// sockets of the exchanges past due. Their operations end with an error (a pending one at once,
// a later one as soon as it starts), and `fired()` tells the exchange it was its deadline: an
// exchange that timed out never hands its connection back.
//
// The exchanges of a pool mostly share one timeout (the upstream's), so a new entry is due after
// those in flight and arming it does not touch the timer; the timer is reprogrammed when it fires
// (about once per timeout while requests keep coming), when an entry is armed with nothing else
// waiting, or when one is due before the wait ends (a route with a shorter upstream_response
// than another in flight on the same upstream).
//
// Not thread-safe: one pool, one executor. The timer's state is shared with its handler, which
// may run after the pool is gone.
class exchange_watch {
    struct state;

public:
    using clock = std::chrono::steady_clock;

    class entry {
    public:
        entry() = default;
        ~entry() { disarm(); }
        entry(const entry&) = delete;
        entry& operator=(const entry&) = delete;

        // Watches `socket` until `due` (or disarm()). An armed entry is disarmed first.
        void arm(exchange_watch& watch, boost::asio::ip::tcp::socket& socket, clock::time_point due)
        {
            disarm();
            fired_ = false;
            socket_ = &socket;
            due_ = due;
            watch.state_->link(*this);
        }
        void disarm() noexcept
        {
            if (owner_)
                owner_->unlink(*this);
        }
        // The deadline passed while armed: the socket was shut down.
        bool fired() const noexcept { return fired_; }

    private:
        friend class exchange_watch;
        friend struct exchange_watch::state;
        state* owner_ = nullptr;
        entry* prev_ = nullptr;
        entry* next_ = nullptr;
        boost::asio::ip::tcp::socket* socket_ = nullptr;
        clock::time_point due_{};
        bool fired_ = false;
    };

    explicit exchange_watch(const boost::asio::any_io_executor& ex) : state_(std::make_shared<state>(ex)) {}
    ~exchange_watch()
    {
        // Entries still linked belong to exchanges that outlive the pool: they stop being watched.
        while (state_->head)
            state_->unlink(*state_->head);
        state_->closed = true;
        state_->timer.cancel();
    }
    exchange_watch(const exchange_watch&) = delete;
    exchange_watch& operator=(const exchange_watch&) = delete;

private:
    struct state : std::enable_shared_from_this<state> {
        explicit state(const boost::asio::any_io_executor& ex) : timer(ex) {}

        void link(entry& e)
        {
            e.owner_ = this;
            e.prev_ = nullptr;
            e.next_ = head;
            if (head)
                head->prev_ = &e;
            head = &e;
            if (!waiting || wakes > e.due_)
                start(e.due_);
        }
        void unlink(entry& e) noexcept
        {
            if (e.prev_)
                e.prev_->next_ = e.next_;
            else
                head = e.next_;
            if (e.next_)
                e.next_->prev_ = e.prev_;
            e.prev_ = e.next_ = nullptr;
            e.owner_ = nullptr;
        }
        void start(clock::time_point at)
        {
            auto current = ++generation;
            waiting = true;
            wakes = at;
            timer.expires_at(at);
            timer.async_wait([self = shared_from_this(), current](const boost::system::error_code& ec) {
                if (current != self->generation)
                    return; // replaced by a later start()
                self->waiting = false;
                if (ec || self->closed)
                    return;
                self->expire();
            });
        }
        // Ends the exchanges past due and waits for the earliest of the others.
        void expire()
        {
            auto now = clock::now();
            bool any = false;
            clock::time_point next{};
            for (entry* e = head; e;) {
                entry* following = e->next_;
                if (e->due_ <= now) {
                    e->fired_ = true;
                    boost::system::error_code ignored;
                    e->socket_->shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
                    e->socket_->cancel(ignored);
                    unlink(*e);
                } else if (!any || e->due_ < next) {
                    any = true;
                    next = e->due_;
                }
                e = following;
            }
            if (any)
                start(next);
        }

        boost::asio::steady_timer timer;
        entry* head = nullptr;
        clock::time_point wakes{}; // when the pending wait ends
        std::uint64_t generation = 0;
        bool waiting = false;
        bool closed = false;
    };

    std::shared_ptr<state> state_;
};

} // namespace idemgate::gateway
