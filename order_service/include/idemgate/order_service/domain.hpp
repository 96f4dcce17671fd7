// SPDX-License-Identifier: Apache-2.0
#pragma once
// The order domain: states, payments, and the payment guard as a pure function (no I/O),
// so the rule the seed calls MarkPaid can be read and tested on its own.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::order_service {

enum class order_status { inventory_reserved, paid, cancelled };

std::string_view to_string(order_status s) noexcept;
std::optional<order_status> parse_order_status(std::string_view s) noexcept;

struct line_item {
    std::string sku;
    std::int64_t qty = 0;
    std::int64_t price_cents = 0;
};

// Which door a payment came through: the API (behind the gateway), the provider's webhook,
// or a payment event on the stream.
enum class payment_source { api, webhook, stream };
std::string_view to_string(payment_source s) noexcept;

struct payment {
    std::int64_t id = 0;
    std::string order_id;
    std::int64_t amount_cents = 0;
    std::string provider_ref; // the payment provider's reference: the business natural key
    std::string source;
    std::int64_t created_at_ms = 0;
};

struct order {
    std::string id;
    order_status status = order_status::inventory_reserved;
    std::vector<line_item> items;
    std::int64_t total_cents = 0;
    std::vector<payment> payments;
    std::int64_t created_at_ms = 0;
};

// A request to pay an order, whatever door it came through.
struct payment_request {
    std::int64_t amount_cents = 0;
    std::string provider_ref;
};

// What the guard decides for a payment request against the order as it is now.
enum class payment_decision {
    record_payment,  // INVENTORY_RESERVED and the amount matches: take it, order becomes PAID
    already_paid,    // PAID with this provider_ref: the same business fact again; no new payment
    ref_conflict,    // PAID with another provider_ref: state conflict (409)
    invalid_state,   // any other state (e.g. CANCELLED): 409
    amount_mismatch, // amount differs from the order total: 422
};

std::string_view to_string(payment_decision d) noexcept;

// The domain guard (the seed's MarkPaid, plus the amount check it asks for). Idempotent on
// provider_ref: the same payment arriving twice, through any door, is recognised, not re-applied.
// The UNIQUE(provider_ref) constraint in the database backs this rule when requests race.
payment_decision decide_payment(const order& o, const payment_request& p) noexcept;

// Sum of qty * price_cents; nullopt on overflow or a negative/zero quantity.
std::optional<std::int64_t> items_total(const std::vector<line_item>& items) noexcept;

} // namespace idemgate::order_service
