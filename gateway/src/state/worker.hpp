// SPDX-License-Identifier: Apache-2.0
#pragma once
// One I/O thread's own resources: its io_context and acceptor, its store session, its share of
// the live configuration (upstream pools), its local tier and access-log batch. Only touched
// from its io_context.
#include "core/exchange.hpp"
#include "state/process.hpp"

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <memory>
#include <random>
#include <string>
#include <thread>

namespace idemgate::gateway::detail {

using tcp = boost::asio::ip::tcp;

class local_tier; // idempotency/local_tier.hpp
struct local_tier_deleter {
    void operator()(local_tier* tier) const noexcept; // defined beside local_tier
};

struct worker {
    worker();
    ~worker();

    // One thread runs it, and every socket and timer it owns is used only from that thread
    // (other threads post to it): the reactor needs no per-descriptor lock. Cross-thread posts
    // and registrations keep their locks.
    boost::asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE_IO};
    tcp::acceptor acceptor{ioc};
    std::unique_ptr<store::session> store;
    std::shared_ptr<request_env> env;                     // the live configuration this thread serves with
    std::unique_ptr<local_tier, local_tier_deleter> tier; // store.local_tier; null when off
    std::mt19937_64 rng{std::random_device{}()};
    std::unique_ptr<access_log_buffer> access_log; // this thread's batch, made on its first line
    std::thread thread;
    // The accept loop is running (false once it returned, after the drain closed the acceptor).
    std::atomic<bool> accepting{false};
    // When this thread last ran a heartbeat the watchdog posted to it (steady clock, ns).
    std::atomic<std::int64_t> heartbeat_ns{0};

    // 128 random bits as 32 hex digits: the owner token of one reservation.
    std::string new_owner_token();
    // The environment for a new request: the live configuration, with this thread's pools for
    // it (made anew after a reload; the old ones go when their last request ends).
    std::shared_ptr<request_env> current(gateway_context& ctx);
};

} // namespace idemgate::gateway::detail
