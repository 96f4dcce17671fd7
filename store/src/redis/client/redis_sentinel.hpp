// SPDX-License-Identifier: Apache-2.0
#pragma once
// Redis Sentinel, private to the store library: which server is the primary now.
//
// One monitor per backend, on the first session's thread. It asks the sentinels in turn
// (SENTINEL get-master-addr-by-name) every second, at once when a sentinel announces
// +switch-master (one subscribed connection), and whenever a data connection finds it is not
// talking to the primary (ROLE at connect, READONLY on a write). Data connections take
// current() as their address on every (re)connect and accept it only if ROLE says master.
#include "redis/client/redis_connection.hpp"

#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <mutex>
#include <optional>

namespace idemgate::store::detail {

class sentinel_monitor : public std::enable_shared_from_this<sentinel_monitor> {
public:
    explicit sentinel_monitor(std::shared_ptr<redis_shared> shared);

    // Starts asking on `ex`. Once.
    void start(boost::asio::any_io_executor ex);
    void shutdown(); // callable from any thread

    // The primary the sentinels named last ({"", 0} until one answered). Thread-safe.
    config::endpoint current() const;

private:
    boost::asio::awaitable<void> run(std::shared_ptr<sentinel_monitor> self);
    boost::asio::awaitable<void> ask();
    void request(); // on this monitor's executor
    // The sentinels name `ep` (a reply, or a +switch-master announcement): a change is logged,
    // counted, and every data connection to the old address is closed at once.
    void name_primary(const config::endpoint& ep, std::string_view source);

    std::shared_ptr<redis_shared> shared_;
    boost::asio::any_io_executor ex_;
    std::shared_ptr<redis_connection> query_;      // asks
    std::shared_ptr<redis_connection> subscribed_; // hears +switch-master
    std::optional<boost::asio::steady_timer> timer_;
    std::size_t next_query_sentinel_ = 0;
    std::size_t next_sub_sentinel_ = 0;
    bool requested_ = false;
    bool stopped_ = false;
    bool reported_unknown_ = false;
    mutable std::mutex mutex_;
    config::endpoint current_{"", 0};
};

} // namespace idemgate::store::detail
