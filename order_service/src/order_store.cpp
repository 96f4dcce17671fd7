// SPDX-License-Identifier: Apache-2.0
#include <boost/json.hpp>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/order_service/order_store.hpp>
#include <random>
#include <sqlite3.h>

namespace idemgate::order_service {
namespace {

constexpr const char* schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS orders (
    id          TEXT PRIMARY KEY,
    status      TEXT NOT NULL,
    total_cents INTEGER NOT NULL,
    items       TEXT NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS payments (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id     TEXT NOT NULL REFERENCES orders(id),
    amount_cents INTEGER NOT NULL,
    provider_ref TEXT NOT NULL UNIQUE,  -- backs the domain guard when two requests race
    source       TEXT NOT NULL,
    created_at   INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS payments_by_order ON payments(order_id);
CREATE TABLE IF NOT EXISTS inbox (
    message_id   TEXT PRIMARY KEY,       -- one row per applied message: redeliveries collide here
    result       TEXT NOT NULL,
    processed_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS executions (
    name  TEXT PRIMARY KEY,
    count INTEGER NOT NULL
);
)sql";

std::string new_order_id()
{
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id = "ord_";
    append_hex_bits(id, rng());
    return id;
}

std::string items_to_json(const std::vector<line_item>& items)
{
    boost::json::array arr;
    for (const auto& item : items)
        arr.push_back({{"sku", item.sku}, {"qty", item.qty}, {"price_cents", item.price_cents}});
    return boost::json::serialize(arr);
}

std::vector<line_item> items_from_json(const std::string& text)
{
    std::vector<line_item> items;
    boost::system::error_code ec;
    auto value = boost::json::parse(text, ec);
    if (ec || !value.is_array())
        return items;
    for (const auto& v : value.as_array()) {
        const auto* obj = v.if_object();
        if (obj == nullptr)
            continue;
        line_item item;
        if (const auto* sku = obj->if_contains("sku"); sku && sku->is_string())
            item.sku = std::string(sku->as_string());
        if (const auto* qty = obj->if_contains("qty"); qty && qty->is_int64())
            item.qty = qty->as_int64();
        if (const auto* price = obj->if_contains("price_cents"); price && price->is_int64())
            item.price_cents = price->as_int64();
        items.push_back(std::move(item));
    }
    return items;
}

} // namespace

std::string_view to_string(inbox_outcome o) noexcept
{
    switch (o) {
    case inbox_outcome::applied: return "applied";
    case inbox_outcome::duplicate: return "duplicate";
    case inbox_outcome::failed: return "failed";
    }
    return "unknown";
}

namespace detail {

boost::system::error_code bump_execution(connection& conn, std::string_view name)
{
    statement st;
    if (auto ec = conn.prepare("INSERT INTO executions(name, count) VALUES (?, 1) "
                               "ON CONFLICT(name) DO UPDATE SET count = count + 1",
                               st))
        return ec;
    return st.bind(1, name).run();
}

boost::system::error_code load_order(connection& conn, std::string_view id, std::optional<order>& out)
{
    out.reset();
    statement st;
    if (auto ec =
            conn.prepare("SELECT id, status, total_cents, items, created_at FROM orders WHERE id = ?", st))
        return ec;
    st.bind(1, id);
    bool row = false;
    if (auto ec = st.step(row))
        return ec;
    if (!row)
        return {};
    order o;
    o.id = st.column_text(0);
    o.status = parse_order_status(st.column_text(1)).value_or(order_status::cancelled);
    o.total_cents = st.column_int64(2);
    o.items = items_from_json(st.column_text(3));
    o.created_at_ms = st.column_int64(4);

    statement ps;
    if (auto ec = conn.prepare("SELECT id, order_id, amount_cents, provider_ref, source, created_at "
                               "FROM payments WHERE order_id = ? ORDER BY id",
                               ps))
        return ec;
    ps.bind(1, id);
    for (;;) {
        if (auto ec = ps.step(row))
            return ec;
        if (!row)
            break;
        payment p;
        p.id = ps.column_int64(0);
        p.order_id = ps.column_text(1);
        p.amount_cents = ps.column_int64(2);
        p.provider_ref = ps.column_text(3);
        p.source = ps.column_text(4);
        p.created_at_ms = ps.column_int64(5);
        o.payments.push_back(std::move(p));
    }
    out = std::move(o);
    return {};
}

} // namespace detail

order_store::order_store(std::string db_path, std::size_t max_idle_connections)
    : pool_(std::move(db_path), max_idle_connections)
{
    auto conn = pool_.acquire();
    if (auto ec = conn->exec(schema_sql))
        throw std::runtime_error("database " + pool_.path() + ": creating the schema: " + ec.message());
}

boost::system::error_code order_store::create_order(std::vector<line_item> items, std::int64_t total_cents,
                                                    std::string_view execution, order& out)
{
    auto conn = pool_.acquire();
    write_transaction tx(*conn);
    if (auto ec = tx.begin())
        return ec;
    if (auto ec = detail::bump_execution(*conn, execution))
        return ec;
    order o;
    o.id = new_order_id();
    o.status = order_status::inventory_reserved;
    o.items = std::move(items);
    o.total_cents = total_cents;
    o.created_at_ms = log::now_unix_ms();
    statement st;
    if (auto ec = conn->prepare(
            "INSERT INTO orders(id, status, total_cents, items, created_at) VALUES (?,?,?,?,?)", st))
        return ec;
    st.bind(1, o.id).bind(2, to_string(o.status)).bind(3, o.total_cents).bind(4, items_to_json(o.items));
    st.bind(5, o.created_at_ms);
    if (auto ec = st.run())
        return ec;
    if (auto ec = tx.commit())
        return ec;
    out = std::move(o);
    return {};
}

boost::system::error_code order_store::find_order(std::string_view id, std::optional<order>& out)
{
    auto conn = pool_.acquire();
    return detail::load_order(*conn, id, out);
}

payment_result order_store::mark_paid(std::string_view order_id, const payment_request& request,
                                      payment_source source, std::string_view execution)
{
    payment_result result;
    auto conn = pool_.acquire();
    write_transaction tx(*conn);
    if ((result.ec = tx.begin()))
        return result;
    if ((result.ec = detail::bump_execution(*conn, execution)))
        return result;
    result = mark_paid_in(*conn, order_id, request, source);
    if (result.ec)
        return result;
    // The decision and, if any, the payment commit together with the execution count.
    if ((result.ec = tx.commit()))
        result.recorded.reset();
    return result;
}

payment_result order_store::mark_paid_in(connection& conn, std::string_view order_id,
                                         const payment_request& request, payment_source source)
{
    payment_result result;
    std::optional<order> found;
    if ((result.ec = detail::load_order(conn, order_id, found)))
        return result;
    if (!found)
        return result;
    result.order_found = true;
    result.current = std::move(*found);
    result.decision = decide_payment(result.current, request);

    if (result.decision == payment_decision::already_paid) {
        result.recorded = result.current.payments.front();
        return result;
    }
    if (result.decision != payment_decision::record_payment)
        return result;

    // The caller holds the write lock (BEGIN IMMEDIATE), so the state read above cannot change
    // under us within this database. The savepoint lets a constraint violation undo only this
    // effect, and the conditional UPDATE plus UNIQUE(provider_ref) keep the rule true even for a
    // writer that did not take the lock first (a reference already used on another order).
    if ((result.ec = conn.exec("SAVEPOINT pay")))
        return result;
    payment p;
    p.order_id = std::string(order_id);
    p.amount_cents = request.amount_cents;
    p.provider_ref = request.provider_ref;
    p.source = std::string(to_string(source));
    p.created_at_ms = log::now_unix_ms();
    statement ins;
    if ((result.ec =
             conn.prepare("INSERT INTO payments(order_id, amount_cents, provider_ref, source, created_at) "
                          "VALUES (?,?,?,?,?)",
                          ins)))
        return result;
    ins.bind(1, p.order_id)
        .bind(2, p.amount_cents)
        .bind(3, p.provider_ref)
        .bind(4, p.source)
        .bind(5, p.created_at_ms);
    auto ec = ins.run();
    if (!ec) {
        p.id = conn.last_insert_rowid();
        statement upd;
        ec = conn.prepare("UPDATE orders SET status = 'PAID' WHERE id = ? AND status = 'INVENTORY_RESERVED'",
                          upd);
        if (!ec)
            ec = upd.bind(1, order_id).run();
        if (!ec && conn.changes() != 1)
            ec = make_sqlite_error(SQLITE_CONSTRAINT);
    }
    if (ec) {
        conn.exec("ROLLBACK TO pay");
        conn.exec("RELEASE pay");
        if (is_constraint_violation(ec)) {
            // The provider reference is already taken (by another order): a conflicting payment.
            result.decision = payment_decision::ref_conflict;
            return result;
        }
        result.ec = ec;
        return result;
    }
    if ((result.ec = conn.exec("RELEASE pay")))
        return result;
    result.current.status = order_status::paid;
    result.current.payments.push_back(p);
    result.recorded = std::move(p);
    return result;
}

boost::system::error_code order_store::cancel_order(std::string_view order_id, bool& found, bool& cancelled)
{
    found = cancelled = false;
    auto conn = pool_.acquire();
    write_transaction tx(*conn);
    if (auto ec = tx.begin())
        return ec;
    if (auto ec = detail::bump_execution(*conn, "cancel"))
        return ec;
    std::optional<order> current;
    if (auto ec = detail::load_order(*conn, order_id, current))
        return ec;
    found = current.has_value();
    if (found && current->status == order_status::inventory_reserved) {
        statement upd;
        if (auto ec = conn->prepare("UPDATE orders SET status = 'CANCELLED' WHERE id = ?", upd))
            return ec;
        if (auto ec = upd.bind(1, order_id).run())
            return ec;
        cancelled = true;
    }
    if (auto ec = tx.commit()) {
        cancelled = false;
        return ec;
    }
    return {};
}

inbox_result order_store::handle_once(std::string_view message_id, const inbox_handler& handler)
{
    inbox_result result;
    auto conn = pool_.acquire();
    {
        // Check, effect and mark in ONE write transaction: two concurrent redeliveries queue on
        // the write lock, and the second one sees the first one's mark (the seed's admitted race).
        write_transaction tx(*conn);
        if ((result.ec = tx.begin()))
            return result;
        statement seen;
        if ((result.ec = conn->prepare("SELECT result FROM inbox WHERE message_id = ?", seen)))
            return result;
        seen.bind(1, message_id);
        bool row = false;
        if ((result.ec = seen.step(row)))
            return result;
        if (row) {
            result.outcome = inbox_outcome::duplicate;
            result.result = seen.column_text(0);
            seen = statement();
            if ((result.ec = detail::bump_execution(*conn, "inbox_duplicate")))
                return result;
            if ((result.ec = tx.commit()))
                result.outcome = inbox_outcome::failed;
            return result;
        }
        seen = statement();

        std::string handler_result;
        if (auto ec = handler(*conn, handler_result)) {
            result.ec = ec;
            tx.rollback();
        } else {
            // The primary key is the last line of defence: an insert that collides fails the
            // whole transaction, effect included.
            statement mark;
            if ((result.ec = conn->prepare(
                     "INSERT INTO inbox(message_id, result, processed_at) VALUES (?,?,?)", mark)))
                return result;
            mark.bind(1, message_id).bind(2, handler_result).bind(3, log::now_unix_ms());
            if ((result.ec = mark.run()))
                return result;
            if ((result.ec = detail::bump_execution(*conn, "inbox_applied")))
                return result;
            if ((result.ec = tx.commit()))
                return result;
            result.outcome = inbox_outcome::applied;
            result.result = std::move(handler_result);
            return result;
        }
    }
    // Failed: nothing of the handler's work is kept; count the failure on its own.
    count_execution("inbox_failed");
    return result;
}

boost::system::error_code order_store::count_execution(std::string_view name)
{
    auto conn = pool_.acquire();
    write_transaction tx(*conn);
    if (auto ec = tx.begin())
        return ec;
    if (auto ec = detail::bump_execution(*conn, name))
        return ec;
    return tx.commit();
}

boost::system::error_code order_store::stats(store_stats& out)
{
    auto conn = pool_.acquire();
    // One read transaction, so the counters and totals come from the same snapshot.
    if (auto ec = conn->exec("BEGIN"))
        return ec;
    struct end_read {
        connection& conn;
        ~end_read() { conn.exec("COMMIT"); }
    } end{*conn};
    statement st;
    if (auto ec = conn->prepare("SELECT name, count FROM executions", st))
        return ec;
    bool row = false;
    for (;;) {
        if (auto ec = st.step(row))
            return ec;
        if (!row)
            break;
        out.executions[st.column_text(0)] = st.column_int64(1);
    }
    struct total {
        const char* sql;
        std::int64_t* into;
    };
    for (auto [sql, into] : {total{"SELECT count(*) FROM orders", &out.orders},
                             total{"SELECT count(*) FROM payments", &out.payments},
                             total{"SELECT count(*) FROM inbox", &out.inbox}}) {
        statement c;
        if (auto ec = conn->prepare(sql, c))
            return ec;
        if (auto ec = c.step(row))
            return ec;
        *into = row ? c.column_int64(0) : 0;
    }
    return {};
}

} // namespace idemgate::order_service
