// SPDX-License-Identifier: Apache-2.0
#pragma once
// A thin RAII layer over the SQLite C API: one connection per thread at a time, prepared
// statements, and SQLite result codes as boost::system::error_code (no exceptions on the data path).
#include <boost/system/error_code.hpp>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct sqlite3;
struct sqlite3_stmt;

namespace idemgate::order_service {

// The category of SQLite's extended result codes (SQLITE_BUSY, SQLITE_CONSTRAINT_UNIQUE, ...).
const boost::system::error_category& sqlite_category() noexcept;
boost::system::error_code make_sqlite_error(int rc) noexcept;
// True for any SQLITE_CONSTRAINT* code (a UNIQUE or PRIMARY KEY violation in this service).
bool is_constraint_violation(const boost::system::error_code& ec) noexcept;

// One prepared statement. Bind with 1-based indexes, step() until it reports no row.
class statement {
public:
    statement() = default;
    explicit statement(sqlite3_stmt* stmt) noexcept : stmt_(stmt) {}
    statement(statement&& other) noexcept : stmt_(std::exchange(other.stmt_, nullptr)) {}
    statement& operator=(statement&& other) noexcept;
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    ~statement();

    statement& bind(int index, std::int64_t value);
    statement& bind(int index, std::string_view value);

    // Advances; `row` is true while a result row is available. Errors end the statement.
    boost::system::error_code step(bool& row);
    // Runs a statement that returns no rows (INSERT/UPDATE/...).
    boost::system::error_code run();

    std::int64_t column_int64(int index) const;
    std::string column_text(int index) const;
    bool column_is_null(int index) const;

private:
    sqlite3_stmt* stmt_ = nullptr;
};

// One SQLite connection (WAL, busy_timeout, foreign keys). Not shared between threads at once.
class connection {
public:
    // Opens (creating if needed) the database file. Throws std::runtime_error at start-up only.
    explicit connection(const std::string& path, int busy_timeout_ms = 5000);
    ~connection();
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    boost::system::error_code exec(const char* sql);
    boost::system::error_code prepare(std::string_view sql, statement& out);
    std::int64_t last_insert_rowid() const;
    std::int64_t changes() const;
    std::string last_error_message() const;

private:
    sqlite3* db_ = nullptr;
};

// A write transaction that takes SQLite's write lock up front (BEGIN IMMEDIATE), so a
// read-check-write inside it cannot interleave with another writer (WAL allows one writer).
// Rolls back in the destructor unless commit() succeeded.
class write_transaction {
public:
    explicit write_transaction(connection& conn) : conn_(conn) {}
    ~write_transaction();
    write_transaction(const write_transaction&) = delete;
    write_transaction& operator=(const write_transaction&) = delete;

    boost::system::error_code begin();
    boost::system::error_code commit();
    void rollback();

private:
    connection& conn_;
    bool open_ = false;
};

// A bounded set of connections to one database file; lease() hands one to the calling thread.
class connection_pool {
public:
    connection_pool(std::string path, std::size_t max_idle);

    class lease {
    public:
        lease(connection_pool& pool, std::unique_ptr<connection> conn) : pool_(&pool), conn_(std::move(conn))
        {
        }
        lease(lease&&) noexcept = default;
        lease& operator=(lease&&) noexcept = default;
        ~lease();
        connection& operator*() const { return *conn_; }
        connection* operator->() const { return conn_.get(); }

    private:
        connection_pool* pool_;
        std::unique_ptr<connection> conn_;
    };

    lease acquire();
    const std::string& path() const { return path_; }

private:
    void give_back(std::unique_ptr<connection> conn);

    std::string path_;
    std::size_t max_idle_;
    std::mutex mutex_;
    std::vector<std::unique_ptr<connection>> idle_;
};

} // namespace idemgate::order_service
