// SPDX-License-Identifier: Apache-2.0
#include <idemgate/common/openssl_error.hpp>
#include <openssl/err.h>

namespace idemgate {

std::string openssl_reason(const boost::system::error_code& ec)
{
    unsigned long code = ERR_peek_last_error();
    ERR_clear_error();
    if (code != 0) {
        if (const char* reason = ERR_reason_error_string(code))
            return reason;
        char text[256];
        ERR_error_string_n(code, text, sizeof text);
        return text;
    }
    return ec ? ec.message() : "OpenSSL gave no reason";
}

} // namespace idemgate
