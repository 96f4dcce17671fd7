// SPDX-License-Identifier: Apache-2.0
#pragma once
// idemgate's own error codes for the data path (error_code, no exceptions).
#include <boost/system/error_code.hpp>
#include <type_traits>

namespace idemgate {

enum class error {
    ok = 0,
    store_unavailable = 1, // not connected / connection lost
    store_timeout,         // command sent, no reply in time: outcome unknown
    store_error_reply,     // the store answered with an error (OOM, READONLY, ...)
    store_protocol,        // the store's reply was not what the command returns
    record_corrupt,        // a stored record did not decode
    store_full,            // the memory store is at its bound and nothing could be evicted
    not_owner,             // complete/release: the key no longer holds this reservation
    upstream_connect,      // could not connect to the upstream
    upstream_timeout,      // the upstream did not answer in time
    upstream_protocol,     // the upstream's answer was not valid HTTP
    upstream_too_large,    // the upstream's body exceeded limits.max_response_body
    record_seal_failed,    // a record could not be encrypted (store.encryption; OpenSSL failed)
};

const boost::system::error_category& idemgate_category() noexcept;

inline boost::system::error_code make_error_code(error e) noexcept
{
    return {static_cast<int>(e), idemgate_category()};
}

} // namespace idemgate

template<>
struct boost::system::is_error_code_enum<idemgate::error> : std::true_type {
};
