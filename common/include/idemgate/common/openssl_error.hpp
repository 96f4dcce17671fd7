// SPDX-License-Identifier: Apache-2.0
#pragma once
// OpenSSL's reason for the most recent failure on this thread (its error queue is cleared), for
// configuration and log messages; `ec`'s message when OpenSSL recorded none.
#include <boost/system/error_code.hpp>
#include <string>

namespace idemgate {

std::string openssl_reason(const boost::system::error_code& ec);

} // namespace idemgate
