// SPDX-License-Identifier: Apache-2.0
#pragma once
// Replication acknowledgements, private to the store library.
//
// consistency strict: after a reservation, WAIT until min_replicas_ack replicas have it. WAIT
// blocks the connection it is sent on until it answers, so it goes on a connection of its own
// per I/O thread and never holds up the thread's other commands (replays, completes). A WAIT
// counts only writes of its own connection: each is preceded, in the same batch, by a write
// to a barrier key, issued after the reservations it covers were answered, so one WAIT covers
// every write made on that server before it (group commit: reservations that arrive while a
// WAIT is out share the next one).
#include "redis/client/redis_connection.hpp"

#include <boost/asio/steady_timer.hpp>
#include <memory>

namespace idemgate::store::detail {

class replica_waiter : public std::enable_shared_from_this<replica_waiter> {
public:
    // `data` is the connection the reservations go on; `conn` the waiter's own connection to the
    // same server (started by the caller).
    replica_waiter(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                   std::shared_ptr<redis_connection> data, std::shared_ptr<redis_connection> conn);

    // How many replicas have every write the data connection made before this call; -1 when
    // unknown (WAIT failed, or went to another server than the data connection).
    boost::asio::awaitable<long long> acknowledged();
    void shutdown();

private:
    struct batch;
    boost::asio::awaitable<void> flush(std::shared_ptr<replica_waiter> self);

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    std::shared_ptr<redis_connection> data_;
    std::shared_ptr<redis_connection> conn_;
    std::shared_ptr<batch> next_; // the batch the next caller joins; null when none is open
    bool in_flight_ = false;      // a WAIT is out
    std::string barrier_key_;
    std::string timeout_; // wait_timeout in ms
};

// consistency strict, after a reservation: false (counted and logged) when the primary reports
// fewer connected replicas than min_replicas_ack, or fewer acknowledged it within wait_timeout.
boost::asio::awaitable<bool> reservation_replicated(replica_waiter& waiter, redis_shared& shared,
                                                    std::string_view key);

// min_replicas_ack, after a complete: WAIT on the data connection's router within half the
// command timeout; a record fewer replicas acknowledged is counted and logged.
boost::asio::awaitable<void> wait_after_complete(command_router& router, redis_shared& shared,
                                                 std::string_view key);

} // namespace idemgate::store::detail
