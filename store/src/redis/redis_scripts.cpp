// SPDX-License-Identifier: Apache-2.0
// The Lua scripts of the Redis store (complete, release, admit) and the argument encodings they
// read; each script's SHA1 is computed once, for EVALSHA.
#include "redis/redis_scripts.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <hiredis/hiredis.h>
#include <idemgate/common/digest.hpp>
#include <idemgate/common/error.hpp>
#include <openssl/sha.h>

namespace idemgate::store::detail {

namespace {

// KEYS[1] key, ARGV[1] completed record, ARGV[2] record_ttl in ms, ARGV[3] (absent for none) the
// command that announces the settlement on the key's channel (wait mode): PUBLISH, or SPUBLISH
// (Redis Cluster: sharded pub/sub; the channel is the key, so it is in the script's slot).
// The record names its owner: its token follows the version byte as varint(n << 1 | packed) and n
// bytes, and the owner's in-flight record starts with version 1 and the same token bytes, so the
// script reads the token's extent from the record instead of being sent the owner prefix.
constexpr std::string_view complete_script =
    "local r = ARGV[1]\n"
    "local t = string.byte(r, 2)\n"
    "local k = 2 + (t - t % 2) / 2\n"
    "if t > 127 then\n"
    "  local n, m, i = 0, 1, 2\n"
    "  repeat t = string.byte(r, i); n = n + t % 128 * m; m = m * 128; i = i + 1 until t < 128\n"
    "  k = i - 1 + (n - n % 2) / 2\n"
    "end\n"
    "local v = redis.call('GET', KEYS[1])\n"
    "if v and string.byte(v) == 1 and string.sub(v, 2, k) == string.sub(r, 2, k) then\n"
    "  redis.call('SET', KEYS[1], r, 'PX', ARGV[2])\n"
    "  if ARGV[3] then redis.call(ARGV[3], KEYS[1], 'c') end\n"
    "  return 1\n"
    "end\n"
    "return 0\n";

// consistency strict, a completed record written again after the primary did not take it or the
// replicas did not acknowledge it (a failover may have lost it): as complete_script, but it also
// writes when the key is gone (the lock was lost with the old primary, or expired); never over
// another owner's lock or record, whose value it returns instead (the caller waits for a lock to
// go, and gives up on a record). ARGV[1] owner prefix (record_codec owner_prefix), ARGV[2] completed
// record, ARGV[3] record_ttl in ms, ARGV[4] PUBLISH, SPUBLISH or "" for none.
constexpr std::string_view resend_script = "local v = redis.call('GET', KEYS[1])\n"
                                           "if (not v) or string.sub(v, 1, #ARGV[1]) == ARGV[1] then\n"
                                           "  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])\n"
                                           "  if ARGV[4] ~= '' then redis.call(ARGV[4], KEYS[1], 'c') end\n"
                                           "  return 1\n"
                                           "end\n"
                                           "return v\n";

// KEYS[1] key, ARGV[1] owner prefix, ARGV[2] (absent for none) PUBLISH or SPUBLISH (as complete_script).
constexpr std::string_view release_script = "local v = redis.call('GET', KEYS[1])\n"
                                            "if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then\n"
                                            "  redis.call('DEL', KEYS[1])\n"
                                            "  if ARGV[2] then redis.call(ARGV[2], KEYS[1], 'r') end\n"
                                            "  return 1\n"
                                            "end\n"
                                            "return 0\n";

// KEYS[1] the tenant's in-flight set, KEYS[2] its token bucket; ARGV[1] owner token,
// ARGV[2] max_in_flight, ARGV[3] new keys per second (0 = unlimited each), ARGV[4] lock_ttl ms.
// Returns {0, 0} admitted, {1, retry ms} too many in flight, {2, retry ms} rate exceeded.
// Redis' own clock (TIME) keeps every gateway on one time line.
constexpr std::string_view admit_script =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "local max = tonumber(ARGV[2])\n"
    "local rate = tonumber(ARGV[3])\n"
    "local ttl = tonumber(ARGV[4])\n"
    "if max > 0 then\n"
    "  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\n"
    "  if redis.call('ZCARD', KEYS[1]) >= max then return {1, 1000} end\n"
    "end\n"
    "if rate > 0 then\n"
    "  local burst = math.max(1, rate)\n"
    "  local b = redis.call('HMGET', KEYS[2], 't', 'ts')\n"
    "  local tokens = burst\n"
    "  if b[1] and b[2] then\n"
    "    tokens = math.min(burst, tonumber(b[1]) + math.max(0, now - tonumber(b[2])) * rate / 1000)\n"
    "  end\n"
    "  if tokens < 1 then return {2, math.ceil((1 - tokens) * 1000 / rate)} end\n"
    "  redis.call('HSET', KEYS[2], 't', tostring(tokens - 1), 'ts', tostring(now))\n"
    "  redis.call('PEXPIRE', KEYS[2], math.ceil(burst * 1000 / rate) + 1000)\n"
    "end\n"
    "if max > 0 then\n"
    "  redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])\n"
    "  if redis.call('PTTL', KEYS[1]) < ttl + 1000 then redis.call('PEXPIRE', KEYS[1], ttl + 1000) end\n"
    "end\n"
    "return {0, 0}\n";

// KEYS[1] the key's execution count, ARGV[1] how long it is kept after this execution (ms).
constexpr std::string_view count_script = "local n = redis.call('INCR', KEYS[1])\n"
                                          "redis.call('PEXPIRE', KEYS[1], ARGV[1])\n"
                                          "return n\n";

// KEYS[1] key, ARGV[1] the owner prefix followed by the in-flight state byte, ARGV[2] lock_ttl ms.
constexpr std::string_view extend_script = "local v = redis.call('GET', KEYS[1])\n"
                                           "if v and string.sub(v, 1, #ARGV[1]) == ARGV[1] then\n"
                                           "  redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                           "  return 1\n"
                                           "end\n"
                                           "return 0\n";

// KEYS[1] a shadow route's totals, KEYS[2..] its window's buckets (one hash tag: one slot);
// ARGV the figures' names. Returns the totals' counts, then the buckets' sums, in ARGV's order
// (0 for a figure a hash lacks): one round trip for a window of up to 1440 buckets.
constexpr std::string_view shadow_read_script =
    "local n = #ARGV\n"
    "local index, out = {}, {}\n"
    "for f = 1, n do index[ARGV[f]] = f; out[f] = 0; out[n + f] = 0 end\n"
    "for k = 1, #KEYS do\n"
    "  local base = 0\n"
    "  if k > 1 then base = n end\n"
    "  local h = redis.call('HGETALL', KEYS[k])\n"
    "  for i = 1, #h, 2 do\n"
    "    local f = index[h[i]]\n"
    "    if f then out[base + f] = out[base + f] + (tonumber(h[i + 1]) or 0) end\n"
    "  end\n"
    "end\n"
    "return out\n";

std::string sha1_hex(std::string_view text)
{
    std::array<unsigned char, SHA_DIGEST_LENGTH> digest{};
    SHA1(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest.data());
    std::string out;
    append_hex(out, digest.data(), digest.size());
    return out;
}

} // namespace

const lua_script& complete_lua()
{
    static const lua_script s{complete_script, sha1_hex(complete_script)};
    return s;
}

const lua_script& resend_lua()
{
    static const lua_script s{resend_script, sha1_hex(resend_script)};
    return s;
}

const lua_script& release_lua()
{
    static const lua_script s{release_script, sha1_hex(release_script)};
    return s;
}

const lua_script& admit_lua()
{
    static const lua_script s{admit_script, sha1_hex(admit_script)};
    return s;
}

const lua_script& count_lua()
{
    static const lua_script s{count_script, sha1_hex(count_script)};
    return s;
}

const lua_script& shadow_read_lua()
{
    static const lua_script s{shadow_read_script, sha1_hex(shadow_read_script)};
    return s;
}

const lua_script& extend_lua()
{
    static const lua_script s{extend_script, sha1_hex(extend_script)};
    return s;
}

// A rate as the script reads it: plain decimal, enough digits for any configured value.
std::string rate_text(double rate)
{
    char buf[64];
    int n = std::snprintf(buf, sizeof buf, "%.6f", rate);
    return std::string(buf, n > 0 ? static_cast<std::size_t>(n) : 0);
}

std::string ttl_ms(duration ttl)
{
    return std::to_string(std::max<duration::rep>(ttl.count(), 1)); // PX 0 is an error
}

expiry expiry_of(duration ttl)
{
    if (ttl.count() >= 1000 && ttl.count() % 1000 == 0)
        return {"EX", std::to_string(ttl.count() / 1000)};
    return {"PX", ttl_ms(ttl)};
}

std::span<const std::string_view> script_args(std::span<const std::string_view> args) noexcept
{
    return !args.empty() && args.back().empty() ? args.first(args.size() - 1) : args;
}

bool is_noscript(const detail::command_result& r)
{
    return r.ec == error::store_error_reply && r.reply &&
           std::string_view(r.reply->str, r.reply->len).starts_with("NOSCRIPT");
}

} // namespace idemgate::store::detail
