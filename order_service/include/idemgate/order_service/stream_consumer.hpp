// SPDX-License-Identifier: Apache-2.0
#pragma once
// The message layer: payment events read from a Redis Stream with a consumer group, applied
// through the inbox (message ID dedupe) and the domain guard, acknowledged after commit.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <idemgate/order_service/order_store.hpp>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace idemgate::order_service {

struct consumer_options {
    std::string redis_host = "127.0.0.1";
    std::uint16_t redis_port = 6379;
    std::string stream = "payments";
    std::string group = "order-service";
    std::string consumer = "order-service-1";
    std::chrono::milliseconds claim_min_idle{30000}; // XAUTOCLAIM pending entries idle this long
    std::chrono::milliseconds block{1000};           // XREADGROUP BLOCK (bounds stop latency)
    std::chrono::milliseconds connect_timeout{1000};
    std::size_t batch = 16; // COUNT per read/claim
    // Test hook: _exit(1) right after the first committed effect, before XACK, as a crash would.
    bool crash_after_effect = false;
};

// A stream entry: its ID and its field/value pairs.
struct stream_message {
    std::string id;
    std::map<std::string, std::string> fields;
};

// What processing one message did (also logged as {"msg":"stream_message",...}).
struct message_outcome {
    inbox_result inbox;
    bool acked = false;
};

// Applies one payment event through the inbox: the message ID is the inbox key, the effect is
// the domain guard (mark_paid_in) on the same transaction. Business outcomes (paid,
// already_paid, conflicts, unknown order, malformed event) are settled results and are marked;
// only storage errors and the test flag `fail_once` fail (nothing marked, redelivered later).
// Thread-safe: several threads may process the same message at once; it is applied once.
inbox_result apply_payment_event(order_store& store, const stream_message& message);

// The consumer thread. Uses the blocking hiredis API: it runs on its own thread, never on an
// io_context thread.
class stream_consumer {
public:
    stream_consumer(order_store& store, consumer_options options);
    ~stream_consumer();
    stream_consumer(const stream_consumer&) = delete;
    stream_consumer& operator=(const stream_consumer&) = delete;

    void start();
    // Asks the loop to stop and joins it (returns within about one BLOCK period).
    void stop();

private:
    void run();

    order_store& store_;
    consumer_options options_;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

} // namespace idemgate::order_service
