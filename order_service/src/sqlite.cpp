// SPDX-License-Identifier: Apache-2.0
#include <idemgate/order_service/sqlite.hpp>
#include <sqlite3.h>
#include <stdexcept>

namespace idemgate::order_service {
namespace {

class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "sqlite"; }
    std::string message(int ev) const override { return sqlite3_errstr(ev); }
};

} // namespace

const boost::system::error_category& sqlite_category() noexcept
{
    static const category instance;
    return instance;
}

boost::system::error_code make_sqlite_error(int rc) noexcept
{
    return {rc, sqlite_category()};
}

bool is_constraint_violation(const boost::system::error_code& ec) noexcept
{
    return ec.category() == sqlite_category() && (ec.value() & 0xff) == SQLITE_CONSTRAINT;
}

// ---- statement ----

statement& statement::operator=(statement&& other) noexcept
{
    if (this != &other) {
        sqlite3_finalize(stmt_);
        stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
}

statement::~statement()
{
    sqlite3_finalize(stmt_);
}

statement& statement::bind(int index, std::int64_t value)
{
    sqlite3_bind_int64(stmt_, index, value);
    return *this;
}

statement& statement::bind(int index, std::string_view value)
{
    sqlite3_bind_text(stmt_, index, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    return *this;
}

boost::system::error_code statement::step(bool& row)
{
    int rc = sqlite3_step(stmt_);
    row = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW || rc == SQLITE_DONE)
        return {};
    return make_sqlite_error(sqlite3_extended_errcode(sqlite3_db_handle(stmt_)));
}

boost::system::error_code statement::run()
{
    bool row = false;
    return step(row);
}

std::int64_t statement::column_int64(int index) const
{
    return sqlite3_column_int64(stmt_, index);
}

std::string statement::column_text(int index) const
{
    auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, index));
    if (text == nullptr)
        return {};
    return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, index)));
}

bool statement::column_is_null(int index) const
{
    return sqlite3_column_type(stmt_, index) == SQLITE_NULL;
}

// ---- connection ----

connection::connection(const std::string& path, int busy_timeout_ms)
{
    // NOMUTEX: a connection is used by one thread at a time (the pool hands it out).
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    int rc = sqlite3_open_v2(path.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK) {
        std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
        sqlite3_close(db_);
        db_ = nullptr;
        throw std::runtime_error("cannot open database " + path + ": " + why);
    }
    sqlite3_extended_result_codes(db_, 1);
    // Waits (up to the timeout) when another connection or process holds the write lock,
    // instead of failing at once with SQLITE_BUSY.
    sqlite3_busy_timeout(db_, busy_timeout_ms);
    // synchronous=NORMAL in WAL mode: a committed transaction survives a process crash
    // (the crash-before-XACK test relies on that); only an OS crash may lose the last commits.
    for (const char* pragma :
         {"PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL", "PRAGMA foreign_keys=ON"}) {
        if (auto ec = exec(pragma))
            throw std::runtime_error(std::string("database ") + path + ": " + pragma + ": " + ec.message());
    }
}

connection::~connection()
{
    sqlite3_close_v2(db_);
}

boost::system::error_code connection::exec(const char* sql)
{
    int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK)
        return make_sqlite_error(sqlite3_extended_errcode(db_));
    return {};
}

boost::system::error_code connection::prepare(std::string_view sql, statement& out)
{
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK)
        return make_sqlite_error(sqlite3_extended_errcode(db_));
    out = statement(stmt);
    return {};
}

std::int64_t connection::last_insert_rowid() const
{
    return sqlite3_last_insert_rowid(db_);
}

std::int64_t connection::changes() const
{
    return sqlite3_changes(db_);
}

std::string connection::last_error_message() const
{
    return sqlite3_errmsg(db_);
}

// ---- write_transaction ----

write_transaction::~write_transaction()
{
    rollback();
}

boost::system::error_code write_transaction::begin()
{
    auto ec = conn_.exec("BEGIN IMMEDIATE");
    open_ = !ec;
    return ec;
}

boost::system::error_code write_transaction::commit()
{
    auto ec = conn_.exec("COMMIT");
    if (!ec)
        open_ = false;
    return ec;
}

void write_transaction::rollback()
{
    if (open_) {
        conn_.exec("ROLLBACK");
        open_ = false;
    }
}

// ---- connection_pool ----

connection_pool::connection_pool(std::string path, std::size_t max_idle)
    : path_(std::move(path)), max_idle_(max_idle)
{
}

connection_pool::lease::~lease()
{
    if (conn_)
        pool_->give_back(std::move(conn_));
}

connection_pool::lease connection_pool::acquire()
{
    {
        std::lock_guard lock(mutex_);
        if (!idle_.empty()) {
            auto conn = std::move(idle_.back());
            idle_.pop_back();
            return lease(*this, std::move(conn));
        }
    }
    return lease(*this, std::make_unique<connection>(path_));
}

void connection_pool::give_back(std::unique_ptr<connection> conn)
{
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle_)
        idle_.push_back(std::move(conn));
}

} // namespace idemgate::order_service
