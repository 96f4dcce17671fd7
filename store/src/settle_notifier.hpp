// SPDX-License-Identifier: Apache-2.0
#pragma once
// Wait mode's wake-ups, private to the store library.
//
// A duplicate of an in-flight request waits for the key to settle (completed, released, held).
// The waiter registers under the key's channel, and whoever learns that the key settled calls
// notify(channel): the memory store itself on complete/release, the Redis subscriber when a
// message arrives. notify() posts to each waiter's own executor, so a waiter's state is only
// ever touched on its thread.
//
// A channel is "active" once a notification for it can be delivered: at once for the memory
// store; for Redis when the server confirmed SUBSCRIBE. A waiter re-reads the key only while its
// channel is active, so no settlement can fall between its read and its subscription.
#include <atomic>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <idemgate/store/store.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace idemgate::store::detail {

class settle_notifier {
public:
    // One waiter. Its fields are touched only on `ex` (the waiter's thread).
    struct waiter {
        explicit waiter(boost::asio::any_io_executor e) : ex(e), timer(e) {}
        boost::asio::any_io_executor ex;
        boost::asio::steady_timer timer; // the wait; cancelled to wake
        bool woken = false;              // a wake-up arrived since the waiter last looked
        bool active = false;             // the channel can deliver notifications
    };

    // `needs_subscription`: channels start inactive and become active through activate()
    // (Redis); otherwise they are active at once (memory).
    explicit settle_notifier(bool needs_subscription) : needs_subscription_(needs_subscription) {}

    // Called (under no lock of ours) when a channel gets its first waiter (true) or loses its
    // last (false). The Redis subscriber sends SUBSCRIBE / UNSUBSCRIBE from it.
    std::function<void(const std::string& channel, bool subscribe)> on_interest;

    // Registers a waiter on `channel`; the returned handle unregisters when destroyed.
    class registration {
    public:
        registration(settle_notifier& n, std::string channel, std::shared_ptr<waiter> w)
            : notifier_(&n), channel_(std::move(channel)), waiter_(std::move(w))
        {
        }
        registration(const registration&) = delete;
        registration& operator=(const registration&) = delete;
        ~registration() { notifier_->remove(channel_, waiter_); }
        waiter& get() const noexcept { return *waiter_; }

    private:
        settle_notifier* notifier_;
        std::string channel_;
        std::shared_ptr<waiter> waiter_;
    };
    std::unique_ptr<registration> watch(const std::string& channel, boost::asio::any_io_executor ex);

    // The key behind `channel` settled: wake its waiters. Thread-safe; cheap when nobody waits.
    void notify(std::string_view channel);
    // The subscription of `channel` is confirmed (Redis): its waiters may re-read the key.
    void activate(std::string_view channel);
    // The subscriber connection was lost: every channel is inactive until subscribed again.
    void deactivate_all();
    // `channel`'s subscription was lost (Redis Cluster: its node, or the server dropped it).
    void deactivate(std::string_view channel);
    // Whether `channel` has waiters now.
    bool wanted(const std::string& channel) const;
    // The channels with waiters now (to subscribe again after a reconnect).
    std::vector<std::string> channels() const;
    // Waiters registered now.
    std::size_t waiting() const noexcept { return waiting_.load(std::memory_order_relaxed); }

private:
    struct channel_state {
        std::vector<std::shared_ptr<waiter>> waiters;
        bool active = false;
    };
    void remove(const std::string& channel, const std::shared_ptr<waiter>& w);
    // Posts a wake-up to each of `ws` on its executor; `active` sets the waiter's active flag.
    static void wake(std::vector<std::shared_ptr<waiter>> ws, bool active);

    const bool needs_subscription_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, channel_state> channels_;
    std::atomic<std::size_t> waiting_{0};
};

// The waiting loop every backend shares: registers on `channel`, re-reads the key with
// session::lookup whenever the channel is active and a wake-up came, and returns when the key
// is no longer in flight or at `timeout`.
boost::asio::awaitable<wait_result> wait_until_settled(settle_notifier& notifier, session& s, scope sc,
                                                       const std::string& channel, duration timeout);

} // namespace idemgate::store::detail
