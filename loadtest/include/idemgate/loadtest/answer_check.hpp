// SPDX-License-Identifier: Apache-2.0
#pragma once
// The idempotency checks: each key's first recorded answer, and every later answer for that key
// compared with it (status, reason, body, end-to-end headers) and required to carry
// `Idempotent-Replayed: true`. Shared by all I/O threads: a key's first answer is published once
// with a compare-and-swap and never changes, so comparisons need no lock.
#include <atomic>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idemgate::loadtest {

namespace http = boost::beast::http;
using response = http::response<http::string_body>;

// What kind of answer a response is, for the checks.
enum class answer_kind {
    recorded,        // an answer the gateway records and must replay (status < 500)
    gateway_problem, // the gateway's own RFC 9457 answer (type urn:idemgate:problem:*): never recorded
    not_recorded     // 5xx: the gateway releases the key, a retry runs again
};

// The slug of an idemgate problem answer ("request-in-flight"), or empty.
std::string_view gateway_problem_slug(const response& res) noexcept;
answer_kind classify(const response& res) noexcept;
bool marked_replayed(const response& res) noexcept;

// Header names never compared: hop-by-hop, re-framed or never replayed (the list the gateway
// records by, idemgate/common/record_headers.hpp), plus the replay marker itself.
bool never_compared(std::string_view lower_name) noexcept;

// One key's first answer, as compared.
struct first_answer {
    unsigned status = 0;
    std::string reason;
    std::string body;
    std::vector<std::pair<std::string, std::string>> headers; // lower-case name, value; sorted by name
};

// Totals of the checks (all threads). The checks do not depend on the order answers arrive in:
// in a storm a replay can reach us before the execution it replays.
struct check_totals {
    std::uint64_t replays_checked = 0;     // answers compared with the first answer seen for their key
    std::uint64_t replays_mismatched = 0;  // status, reason, body or a header differed
    std::uint64_t replays_unmarked = 0;    // executed (unmarked) answers beyond the first for a key
    std::uint64_t unexpected_replays = 0;  // keys (or new keys) answered only by replays: not executed here
    std::uint64_t keys_executed = 0;       // table keys with an executed answer in this run
    std::uint64_t keys_executed_twice = 0; // table keys with more than one executed answer
    std::uint64_t keys_without_answer = 0; // table keys never given a recorded answer
    std::uint64_t new_keys_executed = 0;   // one-off keys (first, mixed) answered as executions
    // One example of each failure, readable; empty when none.
    std::string first_mismatch, first_unmarked, first_unexpected;
};

class answer_checker {
public:
    // `keys`: the table of keys that may be requested more than once (warm keys, storm keys),
    // named <key_prefix>-<index>.
    answer_checker(std::uint64_t keys, std::string key_prefix, std::vector<std::string> ignored_headers);
    ~answer_checker();
    answer_checker(const answer_checker&) = delete;
    answer_checker& operator=(const answer_checker&) = delete;

    // An answer for table key `key` (< keys). `scratch` is the caller's reusable buffer.
    void observe_table_key(std::uint64_t key, std::string_view key_name, const response& res,
                           std::vector<std::pair<std::string_view, std::string_view>>& scratch);
    // An answer for a key sent once (a new key in first or mixed mode).
    void observe_new_key(std::string_view key_name, const response& res);

    // Whether table key `key` has a first answer yet.
    bool has_first(std::uint64_t key) const noexcept;
    // Check failures so far (for the progress line).
    std::uint64_t failures() const noexcept;
    // Replays compared so far, and those that differed (for the time series).
    std::uint64_t replays_checked() const noexcept
    {
        return replays_checked_.load(std::memory_order_relaxed);
    }
    std::uint64_t replays_mismatched() const noexcept
    {
        return replays_mismatched_.load(std::memory_order_relaxed);
    }
    check_totals totals() const;

private:
    void note(std::string& example, std::string description);
    bool same_as_first(const first_answer& first, const response& res,
                       std::vector<std::pair<std::string_view, std::string_view>>& scratch,
                       std::string& difference) const;
    void compared_headers(const response& res,
                          std::vector<std::pair<std::string_view, std::string_view>>& out) const;

    struct slot {
        std::atomic<first_answer*> first{nullptr};
        std::atomic<std::uint32_t> executed{0};
    };
    std::uint64_t keys_;
    std::string key_prefix_;
    std::unique_ptr<slot[]> slots_;
    std::vector<std::string> ignored_;
    std::atomic<std::uint64_t> replays_checked_{0}, replays_mismatched_{0}, replays_unmarked_{0},
        unexpected_new_keys_{0}, new_keys_executed_{0};
    mutable std::mutex example_mutex_;
    std::string first_mismatch_, first_unmarked_, first_unexpected_;
};

} // namespace idemgate::loadtest
