// SPDX-License-Identifier: Apache-2.0
// A Redis connection's command deadlines and its stall check (redis_connection.hpp).
#include "redis/client/redis_connection.hpp"

#include <algorithm>
#include <idemgate/common/log.hpp>

namespace idemgate::store::detail {

using boost::system::error_code;
using clock = std::chrono::steady_clock;

// Command deadlines: one timer per connection, armed for the earliest deadline of a command
// still waiting, instead of one armed (and cancelled) timer per command, which re-programmed
// the thread's timerfd about once per command. Commands are enqueued in deadline order, so a new
// one rarely moves the timer.
void redis_connection::arm_sweep(clock::time_point at)
{
    if (sweep_armed_ && sweep_at_ <= at)
        return;
    sweep_armed_ = true;
    sweep_at_ = at;
    auto generation = ++sweep_generation_;
    sweep_.expires_at(at);
    sweep_.async_wait([self = shared_from_this(), generation](const error_code& ec) {
        if (generation != self->sweep_generation_)
            return; // re-armed earlier meanwhile
        self->sweep_armed_ = false;
        if (!ec)
            self->sweep();
    });
}

void redis_connection::sweep()
{
    auto now = clock::now();
    auto next = clock::time_point::max();
    auto visit = [&](const std::shared_ptr<pending_command>& cmd) {
        if (cmd->done || cmd->abandoned || cmd->expired)
            return;
        if (cmd->deadline <= now) {
            cmd->expired = true;
            cmd->event.cancel(); // its waiter reports the timeout and abandons it
        } else {
            next = std::min(next, cmd->deadline);
        }
    };
    for (const auto& cmd : pending_)
        visit(cmd);
    for (const auto& cmd : waiting_)
        visit(cmd);
    if (next != clock::time_point::max())
        arm_sweep(next);
}

void redis_connection::check_stall()
{
    // A server that has not answered the oldest command for this long is stuck (or the path to
    // it is): reconnect rather than let every command wait out its deadline.
    auto limit = std::max<clock::duration>(shared_->cfg.connect_timeout, 4 * shared_->cfg.command_timeout);
    if (connected_ && !pending_.empty() && clock::now() - pending_.front()->sent > limit) {
        log::coalesced(log::level::warn, "redis not answering; reconnecting", address_.to_string(),
                       {{"address", address_.to_string()}, {"pending", pending_.size()}});
        if (!subscriber_)
            shared_->primary_stalled();
        on_lost(generation_, "stalled", {});
    }
}

} // namespace idemgate::store::detail
