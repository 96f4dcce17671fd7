#include "redis_connection.hpp"

#include <array>
#include <hiredis/hiredis.h>
#include <idemgate/common/error.hpp>
#include <idemgate/common/log.hpp>
#include <idemgate/store/record_codec.hpp>
#include <idemgate/store/redis_store.hpp>
#include <openssl/hmac.h>
#include <openssl/sha.h>

namespace idemgate::store {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

// ':' '%' and bytes outside printable ASCII as %XX, so the ':' between parts is unambiguous.
void append_escaped(std::string& out, std::string_view part)
{
    static constexpr char hex[] = "0123456789ABCDEF";
    for (char ch : part) {
        auto c = static_cast<unsigned char>(ch);
        if (c == ':' || c == '%' || c <= 0x20 || c >= 0x7f) {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        } else {
            out.push_back(ch);
        }
    }
}

// Appends the lower-case hex HMAC-SHA256(secret, message).
void append_hmac_hex(std::string& out, std::string_view secret, std::string_view message)
{
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int mac_size = 0;
    if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
              reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac.data(), &mac_size))
        mac_size = 0; // not reached with OpenSSL's SHA-256; an empty hash never matches a real one
    static constexpr char hex[] = "0123456789abcdef";
    for (unsigned i = 0; i < mac_size; ++i) {
        out.push_back(hex[mac[i] >> 4]);
        out.push_back(hex[mac[i] & 0xf]);
    }
}

} // namespace

std::string redis_key(std::string_view prefix, scope s)
{
    std::string out;
    out.reserve(prefix.size() + s.tenant.size() + s.key.size() + 2);
    out.append(prefix);
    out.push_back(':');
    append_escaped(out, s.tenant);
    out.push_back(':');
    append_escaped(out, s.key);
    return out;
}

std::string hashed_redis_key(std::string_view prefix, scope s, std::string_view secret)
{
    std::string out;
    out.reserve(prefix.size() + 3 + 2 * 32);
    out.append(prefix);
    out.append(":{");
    std::string message;
    message.reserve(s.tenant.size() + 1 + s.key.size());
    message.append(s.tenant);
    message.push_back('\0');
    message.append(s.key);
    append_hmac_hex(out, secret, message);
    out.push_back('}');
    return out;
}

std::string redis_tenant_tag(std::string_view tenant, std::string_view secret)
{
    std::string out;
    if (secret.empty())
        append_escaped(out, tenant);
    else
        append_hmac_hex(out, secret, tenant);
    return out;
}

namespace detail {

std::string redis_key_of(const redis_shared& shared, scope s)
{
    const auto& secret = shared.options.key_hash_secret;
    if (secret.empty())
        return redis_key(shared.cfg.key_prefix, s);
    return hashed_redis_key(shared.cfg.key_prefix, s, secret);
}

std::string redis_tenant_tag(const redis_shared& shared, std::string_view tenant)
{
    return store::redis_tenant_tag(tenant, shared.options.key_hash_secret);
}

} // namespace detail

namespace {

// KEYS[1] key, ARGV[1] owner prefix (record_codec owner_prefix), ARGV[2] completed record,
// ARGV[3] record_ttl in ms. The owner token sits right after the version byte of every
// encoding, so ownership is a prefix comparison.
constexpr std::string_view complete_script = "local v = redis.call('GET', KEYS[1])\n"
                                             "if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then\n"
                                             "  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
                                             "  return 1\n"
                                             "end\n"
                                             "return 0\n";

// KEYS[1] key, ARGV[1] owner prefix.
constexpr std::string_view release_script = "local v = redis.call('GET', KEYS[1])\n"
                                            "if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then\n"
                                            "  redis.call('DEL', KEYS[1])\n"
                                            "  return 1\n"
                                            "end\n"
                                            "return 0\n";

std::string sha1_hex(std::string_view text)
{
    std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (auto b : digest) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 0xf]);
    }
    return out;
}

struct lua_script {
    std::string_view text;
    std::string sha;
};

const lua_script& complete_lua()
{
    static const lua_script s{complete_script, sha1_hex(complete_script)};
    return s;
}

const lua_script& release_lua()
{
    static const lua_script s{release_script, sha1_hex(release_script)};
    return s;
}

std::string ttl_ms(duration ttl)
{
    return std::to_string(std::max<duration::rep>(ttl.count(), 1)); // PX 0 is an error
}

bool is_noscript(const detail::command_result& r)
{
    return r.ec == error::store_error_reply && r.reply &&
           std::string_view(r.reply->str, r.reply->len).starts_with("NOSCRIPT");
}

class redis_session final : public session {
public:
    redis_session(std::shared_ptr<detail::redis_connection> conn,
                  std::shared_ptr<detail::redis_shared> shared)
        : conn_(std::move(conn)), shared_(std::move(shared))
    {
    }

    ~redis_session() override { conn_->shutdown(); }

    asio::awaitable<reserve_result> reserve(scope s, const record& in_flight, duration lock_ttl) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        auto value = encode_record(in_flight);
        auto px = ttl_ms(lock_ttl);
        std::array<std::string_view, 7> args{"SET", key, value, "NX", "PX", px, "GET"};
        auto r = co_await conn_->execute(args);
        reserve_result out;
        if (r.ec) {
            log_if_error_reply("reserve", "SET", r);
            out.ec = r.ec;
            co_return out;
        }
        if (r.reply->type == REDIS_REPLY_NIL) {
            out.acquired = true;
            co_return out;
        }
        if (r.reply->type != REDIS_REPLY_STRING) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            out.ec = make_error_code(error::store_protocol);
            co_return out;
        }
        record existing;
        if (auto ec = decode(key, std::string_view(r.reply->str, r.reply->len), existing)) {
            out.ec = ec;
            co_return out;
        }
        out.existing = std::move(existing);
        co_return out;
    }

    asio::awaitable<error_code> complete(scope s, const record& completed, duration record_ttl) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        auto prefix = owner_prefix(completed.owner_token);
        std::string value;
        if (auto ec = encode_record(completed, value, shared_->options.cipher, key)) {
            log::error("could not encrypt an idempotency record; not stored", {{"key", key}});
            co_return ec;
        }
        auto px = ttl_ms(record_ttl);
        std::array<std::string_view, 4> argv{prefix, value, px, {}};
        co_return co_await run_owned("complete", complete_lua(), key,
                                     std::span<const std::string_view>(argv.data(), 3));
    }

    asio::awaitable<error_code> release(scope s, std::string_view owner_token) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        auto prefix = owner_prefix(owner_token);
        std::array<std::string_view, 1> argv{prefix};
        co_return co_await run_owned("release", release_lua(), key, argv);
    }

    // Admin operations: GET then PTTL (two round trips; off the request path), and DEL.
    asio::awaitable<lookup_result> lookup(scope s) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        lookup_result out;
        std::array<std::string_view, 2> get{"GET", key};
        auto r = co_await conn_->execute(get);
        if (r.ec) {
            log_if_error_reply("lookup", "GET", r);
            out.ec = r.ec;
            co_return out;
        }
        if (r.reply->type == REDIS_REPLY_NIL)
            co_return out;
        record existing;
        if (r.reply->type != REDIS_REPLY_STRING) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            out.ec = make_error_code(error::store_protocol);
            co_return out;
        }
        if (auto ec = decode(key, std::string_view(r.reply->str, r.reply->len), existing)) {
            out.ec = ec;
            co_return out;
        }
        std::array<std::string_view, 2> pttl{"PTTL", key};
        auto t = co_await conn_->execute(pttl);
        if (t.ec) {
            log_if_error_reply("lookup", "PTTL", t);
            out.ec = t.ec;
            co_return out;
        }
        if (t.reply->type != REDIS_REPLY_INTEGER || t.reply->integer < 0)
            co_return out; // expired between the two commands
        out.existing = std::move(existing);
        out.expires_in_ms = t.reply->integer;
        co_return out;
    }

    asio::awaitable<error_code> remove(scope s, bool& removed) override
    {
        auto key = detail::redis_key_of(*shared_, s);
        std::array<std::string_view, 2> del{"DEL", key};
        auto r = co_await conn_->execute(del);
        removed = false;
        if (r.ec) {
            log_if_error_reply("remove", "DEL", r);
            co_return r.ec;
        }
        if (r.reply->type != REDIS_REPLY_INTEGER) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            co_return make_error_code(error::store_protocol);
        }
        removed = r.reply->integer > 0;
        co_return error_code{};
    }

private:
    // A stored value that does not decode, or is sealed and does not open (unknown key, altered,
    // moved from another key), is never served: counted, logged (rate-limited), record_corrupt.
    error_code decode(std::string_view key, std::string_view bytes, record& out)
    {
        seal_fault fault = seal_fault::none;
        auto ec = decode_record(bytes, out, shared_->options.cipher, key, &fault);
        if (ec) {
            shared_->stats.errors_corrupt.fetch_add(1, std::memory_order_relaxed);
            shared_->log_corrupt_record(key, bytes.size(), to_string(fault));
        }
        return ec;
    }

    // EVALSHA the script with one key; on NOSCRIPT (a restarted or flushed server) load it and
    // retry once. 1 -> ok, 0 -> not_owner.
    asio::awaitable<error_code> run_owned(std::string_view operation, const lua_script& script,
                                          std::string_view key, std::span<const std::string_view> script_args)
    {
        std::array<std::string_view, 8> args{"EVALSHA", script.sha, "1", key};
        std::size_t n = 4;
        for (auto a : script_args)
            args[n++] = a;
        std::span<const std::string_view> command(args.data(), n);
        auto r = co_await conn_->execute(command);
        if (is_noscript(r)) {
            std::array<std::string_view, 3> load{"SCRIPT", "LOAD", script.text};
            auto loaded = co_await conn_->execute(load);
            if (loaded.ec) {
                log_if_error_reply(operation, "SCRIPT LOAD", loaded);
                co_return loaded.ec;
            }
            r = co_await conn_->execute(command);
        }
        if (r.ec) {
            log_if_error_reply(operation, "EVALSHA", r);
            co_return r.ec;
        }
        if (r.reply->type != REDIS_REPLY_INTEGER) {
            shared_->stats.errors_protocol.fetch_add(1, std::memory_order_relaxed);
            co_return make_error_code(error::store_protocol);
        }
        if (r.reply->integer == 1)
            co_return error_code{};
        co_return make_error_code(error::not_owner);
    }

    // The caller only gets store_error_reply; the server's text (OOM, READONLY, NOPERM, MOVED...)
    // goes to the log (issue 8, defect 11).
    void log_if_error_reply(std::string_view operation, std::string_view command,
                            const detail::command_result& r)
    {
        if (r.ec == error::store_error_reply)
            shared_->log_error_reply(operation, command, r);
    }

    std::shared_ptr<detail::redis_connection> conn_;
    std::shared_ptr<detail::redis_shared> shared_;
};

class redis_backend_impl final : public redis_backend {
public:
    redis_backend_impl(const config::redis_config& cfg, const redis_options& options)
        : shared_(std::make_shared<detail::redis_shared>(cfg, options))
    {
    }

    std::unique_ptr<session> open_session(asio::any_io_executor ex) override
    {
        auto conn = std::make_shared<detail::redis_connection>(std::move(ex), shared_);
        conn->start();
        return std::make_unique<redis_session>(std::move(conn), shared_);
    }

    bool ready() const override { return shared_->stats.connections_up.load(std::memory_order_relaxed) > 0; }
    std::string_view kind() const noexcept override { return "redis"; }
    const redis_stats& stats() const noexcept override { return shared_->stats; }

private:
    std::shared_ptr<detail::redis_shared> shared_;
};

} // namespace

std::shared_ptr<redis_backend> make_redis_backend(const config::redis_config& cfg,
                                                  const redis_options& options)
{
    return std::make_shared<redis_backend_impl>(cfg, options);
}

} // namespace idemgate::store
