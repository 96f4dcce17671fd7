// SPDX-License-Identifier: Apache-2.0
#include <idemgate/order_service/domain.hpp>
#include <limits>

namespace idemgate::order_service {

std::string_view to_string(order_status s) noexcept
{
    switch (s) {
    case order_status::inventory_reserved: return "INVENTORY_RESERVED";
    case order_status::paid: return "PAID";
    case order_status::cancelled: return "CANCELLED";
    }
    return "UNKNOWN";
}

std::optional<order_status> parse_order_status(std::string_view s) noexcept
{
    for (auto st : {order_status::inventory_reserved, order_status::paid, order_status::cancelled}) {
        if (to_string(st) == s)
            return st;
    }
    return std::nullopt;
}

std::string_view to_string(payment_source s) noexcept
{
    switch (s) {
    case payment_source::api: return "api";
    case payment_source::webhook: return "webhook";
    case payment_source::stream: return "stream";
    }
    return "unknown";
}

std::string_view to_string(payment_decision d) noexcept
{
    switch (d) {
    case payment_decision::record_payment: return "paid";
    case payment_decision::already_paid: return "already_paid";
    case payment_decision::ref_conflict: return "ref_conflict";
    case payment_decision::invalid_state: return "invalid_state";
    case payment_decision::amount_mismatch: return "amount_mismatch";
    }
    return "unknown";
}

payment_decision decide_payment(const order& o, const payment_request& p) noexcept
{
    switch (o.status) {
    case order_status::paid:
        // Only the first payment's reference makes a repeat harmless; anything else is a
        // second, different payment for an order that is already paid.
        if (!o.payments.empty() && o.payments.front().provider_ref == p.provider_ref)
            return payment_decision::already_paid;
        return payment_decision::ref_conflict;
    case order_status::inventory_reserved:
        if (p.amount_cents != o.total_cents)
            return payment_decision::amount_mismatch;
        return payment_decision::record_payment;
    case order_status::cancelled: return payment_decision::invalid_state;
    }
    return payment_decision::invalid_state;
}

std::optional<std::int64_t> items_total(const std::vector<line_item>& items) noexcept
{
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    std::int64_t total = 0;
    for (const auto& item : items) {
        if (item.qty <= 0 || item.price_cents < 0)
            return std::nullopt;
        if (item.price_cents != 0 && item.qty > max / item.price_cents)
            return std::nullopt;
        std::int64_t line = item.qty * item.price_cents;
        if (total > max - line)
            return std::nullopt;
        total += line;
    }
    return total;
}

} // namespace idemgate::order_service
