// SPDX-License-Identifier: Apache-2.0
#pragma once
// consistency strict: a completed record the primary did not take (the connection failed) or the
// replicas did not acknowledge (WAIT) may be lost by the next failover, and the key would then
// run again once its lock expired. Such records wait in a bounded per-thread queue and are
// written again to whichever server is the primary now, owner-checked (never over another
// owner's lock or record; also when the key is gone, as after a failover that lost the lock),
// until the replicas acknowledge them. Another request's lock (a retry refused, running, or of a
// gateway that died) is waited out; another request's record ends the attempt. Private to the
// store library.
#include "redis/client/redis_connection.hpp"
#include "redis/client/replica_wait.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace idemgate::store::detail {

class complete_resender : public std::enable_shared_from_this<complete_resender> {
public:
    // Records waiting at most, per thread; one more is refused (the caller reports it lost).
    static constexpr std::size_t max_pending = 1024;

    // `data`: the thread's data connection (consistency strict runs over one server, the primary
    // the connection follows); `waiter` counts the acknowledgements of what was written on it.
    complete_resender(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                      std::shared_ptr<redis_connection> data, std::shared_ptr<replica_waiter> waiter);

    // After the complete script ran on the data connection (`ec` its result): waits for the
    // replicas' acknowledgement; a record the primary did not take, or the replicas did not
    // acknowledge, is queued (counted unreplicated when it was written). Returns ok when the record
    // is acknowledged or queued, so the client still gets its answer; an error when another owner
    // holds the key (not_owner) or the queue is full (the caller reports the record lost).
    boost::asio::awaitable<boost::system::error_code> settle(boost::system::error_code ec, std::string key,
                                                             std::string prefix, std::string value,
                                                             std::string publish, duration record_ttl);

    // Queues the record `value` of `key` (its owner `prefix`, the publish command or ""), to
    // expire at `expires`. False when the queue is full.
    bool add(std::string key, std::string prefix, std::string value, std::string publish,
             std::chrono::steady_clock::time_point expires);
    // Stops; what still waits is counted as dropped and logged.
    void shutdown();

private:
    struct pending_record {
        std::string key;
        std::string prefix;
        std::string value;
        std::string publish;
        std::chrono::steady_clock::time_point expires;
    };
    boost::asio::awaitable<void> run(std::shared_ptr<complete_resender> self);
    // One attempt: true when the record is settled (acknowledged, or dropped).
    boost::asio::awaitable<bool> attempt(const pending_record& p);
    boost::asio::awaitable<command_result> resend(std::span<const std::string_view> args);
    void drop(const pending_record& p, std::string_view why);

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    std::shared_ptr<redis_connection> data_;
    std::shared_ptr<replica_waiter> waiter_;
    std::deque<pending_record> pending_;
    boost::asio::steady_timer wake_;
    bool running_ = false;
    bool stopped_ = false;
};

} // namespace idemgate::store::detail
