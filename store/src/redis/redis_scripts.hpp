// SPDX-License-Identifier: Apache-2.0
// The Redis store's Lua scripts, run by EVALSHA (their text is sent again after a NOSCRIPT), and
// the compact argument encodings they and SET read.
#pragma once

#include "redis/client/redis_connection.hpp"

#include <idemgate/store/store.hpp>
#include <span>
#include <string>
#include <string_view>

namespace idemgate::store::detail {

struct lua_script {
    std::string_view text;
    std::string sha; // lower-case hex SHA1 of text
};

// complete: SET the finished record if this owner still holds the key, and announce it in wait
// mode. release: DEL the key if this owner still holds it. admit: a tenant's in-flight and
// new-key limits. The comments in redis_scripts.cpp list each script's KEYS and ARGV.
const lua_script& complete_lua();
// consistency strict: complete_lua for a record written again after a failover (also when the key
// is gone; never over another owner's).
const lua_script& resend_lua();
const lua_script& release_lua();
const lua_script& admit_lua();
// count: INCR a key's execution count and keep it for a TTL. extend: PEXPIRE a key whose value
// starts with a prefix (an owner's in-flight record).
const lua_script& count_lua();
const lua_script& extend_lua();
// shadow_read: a shadow route's totals and its window's sums, from HGETALL of each hash.
const lua_script& shadow_read_lua();

// A rate as the admit script reads it: plain decimal, enough digits for any configured value.
std::string rate_text(double rate);
// A TTL in milliseconds for PX, at least 1 (PX 0 is an error).
std::string ttl_ms(duration ttl);
// A TTL as SET's expiry option: EX and whole seconds when it is a whole number of seconds (three
// bytes fewer than PX and milliseconds), else PX and ttl_ms.
struct expiry {
    std::string_view option;
    std::string value;
};
expiry expiry_of(duration ttl);
// A script's arguments with the publish command last: without it when it is "" (none).
std::span<const std::string_view> script_args(std::span<const std::string_view> args) noexcept;
// The server does not have the script cached (a restart, a failover, SCRIPT FLUSH).
bool is_noscript(const command_result& r);

} // namespace idemgate::store::detail
