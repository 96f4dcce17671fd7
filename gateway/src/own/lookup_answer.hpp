// SPDX-License-Identifier: Apache-2.0
#pragma once
// A client lookup's answer (GET <client_lookup_path><key>): what the store holds under the
// caller's scope, as JSON (state, status, created, expires, location, replayable). The lookup
// phase (idempotency/client_lookup.cpp) reads the store; this renders what it found.
#include "core/exchange.hpp"

#include <idemgate/store/store.hpp>

namespace idemgate::gateway::detail {

// `found.existing` is the key's record, or its tombstone when the record expired (then
// `found.expires_in_ms` is not read), or nothing.
response_type lookup_answer(const store::lookup_result& found, unsigned version, bool keep_alive);

} // namespace idemgate::gateway::detail
