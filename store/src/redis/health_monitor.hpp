// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis store's health monitor (redis_options::health_checks), one per backend, run by the
// first session on its thread through that session's router:
//  - after each (re)connect, and every health_interval while the store refuses writes or a
//    command, the command check: one run on <key_prefix>:probe of each command a request needs
//    (SET, GET, EVAL, EVALSHA, and inside the scripts GET, DEL and, in wait mode, PUBLISH or
//    SPUBLISH). It is also the probe write that ends the refusing state.
//  - every health_interval, the marker: <key_prefix>:marker holds a random instance id, written
//    once (SET NX, no TTL); gone or replaced, Redis lost its data (redis_health::note_emptied).
// Private to the store library.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <string>

namespace idemgate::store::detail {

class health_monitor : public std::enable_shared_from_this<health_monitor> {
public:
    health_monitor(boost::asio::any_io_executor ex, std::shared_ptr<redis_shared> shared,
                   std::shared_ptr<command_router> router);

    void start();
    // On the monitor's thread (the session's destructor): stops at its next step.
    void shutdown();

    // The probe key and the marker key of a prefix.
    static std::string probe_key(std::string_view key_prefix);
    static std::string marker_key(std::string_view key_prefix);

private:
    enum class check_result { passed, refused, unknown };

    boost::asio::awaitable<void> run(std::shared_ptr<health_monitor> self);
    // Runs the command check; on `refused`, refused_command_ and refused_reply_ say which.
    boost::asio::awaitable<check_result> check_commands();
    boost::asio::awaitable<void> check_marker();
    // One command of the check: false when it did not run (refused: `result` says so).
    boost::asio::awaitable<bool> step(std::string_view name, std::string_view key,
                                      std::span<const std::string_view> args, check_result& result);

    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_shared> shared_;
    std::shared_ptr<command_router> router_;
    boost::asio::steady_timer timer_;
    bool stopped_ = false;
    std::uint64_t checked_connects_ = ~std::uint64_t{0}; // stats.connects at the last check that answered
    std::string instance_id_;                            // what this process writes into the marker
    std::string marker_; // what the marker held at the last look ("" = not read yet)
    std::string refused_command_;
    std::string refused_reply_;
};

} // namespace idemgate::store::detail
