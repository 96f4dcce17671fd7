// SPDX-License-Identifier: Apache-2.0
#include <idemgate/common/error.hpp>
#include <string>

namespace idemgate {
namespace {

class category final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "idemgate"; }

    std::string message(int ev) const override
    {
        switch (static_cast<error>(ev)) {
        case error::ok: return "ok";
        case error::store_unavailable: return "store unavailable";
        case error::store_timeout: return "store command timed out (outcome unknown)";
        case error::store_error_reply: return "store answered with an error";
        case error::store_protocol: return "unexpected reply from the store";
        case error::record_corrupt: return "stored record does not decode";
        case error::store_full: return "memory store is full";
        case error::not_owner: return "reservation no longer owns the key";
        case error::upstream_connect: return "cannot connect to the upstream";
        case error::upstream_timeout: return "upstream timed out";
        case error::upstream_protocol: return "invalid HTTP from the upstream";
        case error::upstream_too_large: return "upstream response exceeds max_response_body";
        case error::record_seal_failed: return "record could not be encrypted";
        }
        return "unknown idemgate error";
    }
};

} // namespace

const boost::system::error_category& idemgate_category() noexcept
{
    static const category instance;
    return instance;
}

} // namespace idemgate
