// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the Redis store knows of its own health beside reachability, for /readyz and the logs:
// the refusing state (error replies to writes), a command its check found refused, an evicting
// maxmemory-policy, persistence, and the loss of its data (the marker key gone). Shared by every
// connection of one backend; thread-safe. Private to the store library.
#include <atomic>
#include <boost/describe/enum.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <idemgate/common/enum_count.hpp>
#include <idemgate/config/config.hpp>
#include <idemgate/store/redis_store.hpp>
#include <idemgate/store/store.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::store::detail {

// The kinds of error replies redis_stats::refusals counts, in its order.
BOOST_DEFINE_ENUM_CLASS(refusal_kind, noperm, readonly, oom, noscript, other);
inline constexpr std::size_t refusal_kind_count = enum_count<refusal_kind>;
std::string_view refusal_kind_name(std::size_t index) noexcept; // "noperm", ...: the enumerator's name

// What an error reply to a write is: a refusal of that kind, or nullopt for the answers of a
// store that is moving (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, LOADING, BUSY, MASTERDOWN), which say
// "unreachable for now" rather than "refusing"; READONLY too in Sentinel mode, where it sends
// the gateway to the new primary.
std::optional<refusal_kind> classify_refusal(std::string_view reply, bool sentinel_mode) noexcept;

class redis_health {
public:
    using clock = std::chrono::steady_clock;

    // How long /readyz names an emptied Redis after it was found.
    static constexpr std::chrono::minutes emptied_note_for{5};

    redis_health(const config::redis_config& cfg, redis_stats& stats) : cfg_(cfg), stats_(stats) {}

    // The backend's refusing flag (backend::refusing), set while refusing or a command is refused.
    void bind(std::shared_ptr<std::atomic<bool>> flag) { flag_ = std::move(flag); }
    // The monitor runs: from now on error replies can put the store in the refusing state.
    void enable() noexcept { enabled_.store(true, std::memory_order_relaxed); }
    bool enabled() const noexcept { return enabled_.load(std::memory_order_relaxed); }
    void set_policy(const refusal_policy& policy);

    // An error reply `reply` to `command` sent for `operation` (reserve, complete): counted by
    // kind, and the store refuses writes once policy.errors of them came within policy.window.
    void note_refusal(std::string_view operation, std::string_view command, std::string_view reply);
    // The check ran every command without an error reply: the refusing state and a refused
    // command end.
    void check_passed();
    // The check found `command` refused with `reply`.
    void check_refused(std::string_view command, std::string_view reply);
    // The monitor must run the check again soon: refusing, or a command refused.
    bool needs_probe() const;

    // What CONFIG GET said of maxmemory-policy and persistence (nullopt: refused or unreadable).
    void note_policy(std::optional<std::string_view> policy);
    void note_persistence(std::optional<bool> persists);
    // The marker was gone (or replaced by another gateway's): Redis lost its data.
    void note_emptied();

    // The conditions and notes, for backend::status.
    store_status status() const;

private:
    void publish_locked(); // the backend's flag from refusing_ and refused_command_

    const config::redis_config& cfg_;
    redis_stats& stats_;
    std::shared_ptr<std::atomic<bool>> flag_;
    std::atomic<bool> enabled_{false};
    mutable std::mutex mutex_;
    refusal_policy policy_;
    std::deque<clock::time_point> recent_; // error replies within the window, oldest first
    bool refusing_ = false;
    std::string refusing_reason_; // the reply that tipped it, for /readyz
    std::string refused_command_; // "" = the last check passed (or none ran)
    std::string refused_reply_;
    std::optional<std::string> policy_text_; // nullopt: unknown
    std::optional<bool> persists_;           // nullopt: unknown
    std::optional<clock::time_point> emptied_at_;
};

} // namespace idemgate::store::detail
