// SPDX-License-Identifier: Apache-2.0
#pragma once
// Orders, payments, the message inbox and the execution counters, persisted in SQLite.
// Every method blocks (SQLite is synchronous): call them from a thread that may block,
// never from an io_context thread.
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <functional>
#include <idemgate/order_service/domain.hpp>
#include <idemgate/order_service/sqlite.hpp>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace idemgate::order_service {

// The answer of the payment guard once it has run against the stored order.
struct payment_result {
    boost::system::error_code ec; // storage failed: nothing was decided or written
    bool order_found = false;
    payment_decision decision = payment_decision::invalid_state;
    std::optional<payment> recorded; // the new payment (paid) or the existing one (already_paid)
    order current;                   // the order after the decision
};

enum class inbox_outcome {
    applied,   // first delivery of this message ID: the handler ran and its effect committed
    duplicate, // this message ID was already applied: the handler did not run
    failed,    // the handler (or storage) failed: nothing was marked, a redelivery will retry
};
std::string_view to_string(inbox_outcome o) noexcept;

struct inbox_result {
    inbox_outcome outcome = inbox_outcome::failed;
    boost::system::error_code ec; // set when outcome == failed
    std::string result;           // what the handler recorded (for a duplicate: the first result)
};

// Execution counters and totals shown by GET /stats.
struct store_stats {
    std::map<std::string, std::int64_t> executions;
    std::int64_t orders = 0;
    std::int64_t payments = 0;
    std::int64_t inbox = 0;
};

class order_store {
public:
    // Opens the database file (WAL) and creates the schema. Throws std::runtime_error at start-up.
    explicit order_store(std::string db_path, std::size_t max_idle_connections = 8);

    // Inserts an order in INVENTORY_RESERVED and counts one `execution` in the same transaction.
    boost::system::error_code create_order(std::vector<line_item> items, std::int64_t total_cents,
                                           std::string_view execution, order& out);

    // Reads an order with its payments; `out` stays empty when there is no such order.
    boost::system::error_code find_order(std::string_view id, std::optional<order>& out);

    // The domain guard in its own write transaction: reads the order, decides (decide_payment),
    // records the payment if so decided, counts one `execution`; all or nothing.
    payment_result mark_paid(std::string_view order_id, const payment_request& request, payment_source source,
                             std::string_view execution);

    // The same guard inside a transaction the caller already holds on `conn` (the inbox uses it
    // so that the effect and the inbox mark commit together).
    static payment_result mark_paid_in(connection& conn, std::string_view order_id,
                                       const payment_request& request, payment_source source);

    // INVENTORY_RESERVED -> CANCELLED. `found`/`cancelled` say what happened.
    boost::system::error_code cancel_order(std::string_view order_id, bool& found, bool& cancelled);

    // Runs `handler` for message_id at most once to completion. In one write transaction: if the
    // inbox holds message_id, it is a duplicate and the handler does not run; otherwise the
    // handler runs on the same connection and the inbox row is inserted before COMMIT. A handler
    // error rolls everything back (nothing marked), so the redelivery retries. The handler sets
    // `result` to a short word stored with the mark (e.g. "paid", "already_paid").
    using inbox_handler = std::function<boost::system::error_code(connection& conn, std::string& result)>;
    inbox_result handle_once(std::string_view message_id, const inbox_handler& handler);

    // Adds one to an execution counter in its own transaction (for work that has no transaction).
    boost::system::error_code count_execution(std::string_view name);

    boost::system::error_code stats(store_stats& out);

    const std::string& path() const { return pool_.path(); }

private:
    connection_pool pool_;
};

namespace detail {
// Adds one to executions[name] on `conn` (inside the caller's transaction).
boost::system::error_code bump_execution(connection& conn, std::string_view name);
// Loads an order and its payments on `conn`.
boost::system::error_code load_order(connection& conn, std::string_view id, std::optional<order>& out);
} // namespace detail

} // namespace idemgate::order_service
