// SPDX-License-Identifier: Apache-2.0
#include <boost/json.hpp>
#include <charconv>
#include <chrono>
#include <exception>
#include <idemgate/common/log.hpp>
#include <idemgate/order_service/http_api.hpp>
#include <thread>

namespace idemgate::order_service {
namespace {

namespace http = boost::beast::http;
namespace json = boost::json;

constexpr std::string_view orders_prefix = "/api/v1/orders";
constexpr std::size_t max_fail_tokens = 10000;
constexpr std::size_t max_provider_ref = 255;
constexpr std::size_t max_items = 1000;

http_response json_response(http::status status, const json::value& body, unsigned version)
{
    http_response res{status, version};
    res.set(http::field::content_type, "application/json");
    res.body() = json::serialize(body);
    return res;
}

http_response bad_request(std::string_view detail, unsigned version)
{
    return problem(400, "about:blank", "Bad Request", detail, version);
}

http_response not_found(std::string_view detail, unsigned version)
{
    return problem(404, "about:blank", "Not Found", detail, version);
}

http_response storage_failure(const boost::system::error_code& ec, unsigned version)
{
    log::error("storage_failure", {{"error", ec.message()}});
    return problem(503, "urn:idemgate:order-service:storage-unavailable", "Storage unavailable",
                   "the order database failed: " + ec.message(), version);
}

json::object to_json(const payment& p)
{
    return {{"id", p.id},
            {"order_id", p.order_id},
            {"amount_cents", p.amount_cents},
            {"provider_ref", p.provider_ref},
            {"source", p.source},
            {"created_at_ms", p.created_at_ms}};
}

json::object to_json(const order& o)
{
    json::array items;
    for (const auto& item : o.items)
        items.push_back({{"sku", item.sku}, {"qty", item.qty}, {"price_cents", item.price_cents}});
    json::array payments;
    for (const auto& p : o.payments)
        payments.push_back(to_json(p));
    return {{"id", o.id},
            {"status", to_string(o.status)},
            {"items", std::move(items)},
            {"total_cents", o.total_cents},
            {"payments", std::move(payments)},
            {"created_at_ms", o.created_at_ms}};
}

// Parses a JSON object body; on failure fills `error` with the 400 answer.
bool parse_object(const http_request& req, json::object& out, std::optional<http_response>& error)
{
    boost::system::error_code ec;
    json::value value = json::parse(req.body(), ec);
    if (ec) {
        error = bad_request("request body is not valid JSON: " + ec.message(), req.version());
        return false;
    }
    if (!value.is_object()) {
        error = bad_request("request body must be a JSON object", req.version());
        return false;
    }
    out = std::move(value.as_object());
    return true;
}

// An integer member; false (and a 400 in `error`) when absent or not an integer.
bool int_member(const json::object& obj, std::string_view name, std::int64_t& out, const http_request& req,
                std::optional<http_response>& error)
{
    const auto* v = obj.if_contains(name);
    if (v == nullptr || !v->is_int64()) {
        error = bad_request(std::string(name) + " must be an integer", req.version());
        return false;
    }
    out = v->as_int64();
    return true;
}

bool string_member(const json::object& obj, std::string_view name, std::size_t max_len, std::string& out,
                   const http_request& req, std::optional<http_response>& error)
{
    const auto* v = obj.if_contains(name);
    if (v == nullptr || !v->is_string() || v->as_string().empty() || v->as_string().size() > max_len) {
        error = bad_request(std::string(name) + " must be a non-empty string of at most " +
                                std::to_string(max_len) + " characters",
                            req.version());
        return false;
    }
    out = std::string(v->as_string());
    return true;
}

} // namespace

http_response problem(unsigned status, std::string_view type, std::string_view title, std::string_view detail,
                      unsigned version)
{
    http_response res{static_cast<http::status>(status), version};
    res.set(http::field::content_type, "application/problem+json");
    json::object body{{"type", type}, {"title", title}, {"status", status}, {"detail", detail}};
    res.body() = json::serialize(body);
    return res;
}

http_response api::handle(const http_request& req)
{
    try {
        return route(req);
    } catch (const std::exception& e) {
        // Nothing a client sends should get here; a failure to open a database connection can.
        log::error("handler_exception", {{"error", e.what()}, {"target", std::string_view(req.target())}});
        return problem(500, "about:blank", "Internal Server Error", "the order service failed",
                       req.version());
    }
}

bool api::first_failure(std::string_view token)
{
    std::lock_guard lock(fail_mutex_);
    if (failed_tokens_.contains(std::string(token)))
        return false;
    if (failed_tokens_.size() >= max_fail_tokens)
        failed_tokens_.clear();
    failed_tokens_.emplace(token);
    return true;
}

http_response api::route(const http_request& req)
{
    std::string_view target = req.target();
    if (auto q = target.find('?'); q != std::string_view::npos)
        target = target.substr(0, q);
    const auto method = req.method();

    if (method == http::verb::post) {
        if (auto it = req.find(attempt_header); it != req.end()) {
            auto key = req.find("Idempotency-Key");
            boost::json::object fields{
                {"attempt", std::string_view(it->value())},
                {"key", key == req.end() ? std::string_view{} : std::string_view(key->value())},
                {"target", target}};
            if (it->value() == "1")
                log::info("attempt", std::move(fields));
            else
                log::warn("attempt", std::move(fields)); // the gateway released the key and it runs again
        }
    }

    // Test hook: fail the first request with this token, counted as an execution of its endpoint.
    if (method == http::verb::post) {
        if (auto it = req.find(fail_once_header); it != req.end() && first_failure(it->value())) {
            std::string_view execution = "other";
            if (target == orders_prefix)
                execution = "create_order";
            else if (target == "/webhooks/payments")
                execution = "webhook";
            else if (target.ends_with("/payments"))
                execution = "pay";
            store_.count_execution(execution);
            return problem(500, "urn:idemgate:order-service:injected-failure", "Injected failure",
                           "X-Fail-Once: the first request with this token fails on purpose", req.version());
        }
    }

    if (target == "/healthz")
        return json_response(http::status::ok, {{"status", "ok"}}, req.version());
    if (target == "/stats") {
        if (method != http::verb::get)
            return problem(405, "about:blank", "Method Not Allowed", "use GET", req.version());
        return stats(req);
    }
    if (target == "/webhooks/payments") {
        if (method != http::verb::post)
            return problem(405, "about:blank", "Method Not Allowed", "use POST", req.version());
        return pay(req, {}, true);
    }
    if (target == orders_prefix) {
        if (method != http::verb::post)
            return problem(405, "about:blank", "Method Not Allowed", "use POST", req.version());
        return create_order(req);
    }
    if (target.starts_with(orders_prefix) && target.size() > orders_prefix.size() + 1 &&
        target[orders_prefix.size()] == '/') {
        std::string_view rest = target.substr(orders_prefix.size() + 1);
        auto slash = rest.find('/');
        std::string_view id = rest.substr(0, slash);
        std::string_view action =
            slash == std::string_view::npos ? std::string_view{} : rest.substr(slash + 1);
        if (action.empty()) {
            if (method != http::verb::get)
                return problem(405, "about:blank", "Method Not Allowed", "use GET", req.version());
            return get_order(req, id);
        }
        if (action == "payments" || action == "cancel") {
            if (method != http::verb::post)
                return problem(405, "about:blank", "Method Not Allowed", "use POST", req.version());
            if (action == "payments")
                return pay(req, id, false);
            return cancel(req, id);
        }
    }
    return not_found("no such resource: " + std::string(target), req.version());
}

http_response api::create_order(const http_request& req)
{
    std::optional<http_response> error;
    json::object body;
    if (!parse_object(req, body, error))
        return std::move(*error);
    const auto* items_value = body.if_contains("items");
    if (items_value == nullptr || !items_value->is_array() || items_value->as_array().empty() ||
        items_value->as_array().size() > max_items)
        return bad_request("items must be a non-empty array of at most 1000 {sku, qty, price_cents}",
                           req.version());
    std::vector<line_item> items;
    for (const auto& v : items_value->as_array()) {
        const auto* obj = v.if_object();
        if (obj == nullptr)
            return bad_request("each item must be an object {sku, qty, price_cents}", req.version());
        line_item item;
        if (!string_member(*obj, "sku", 128, item.sku, req, error) ||
            !int_member(*obj, "qty", item.qty, req, error) ||
            !int_member(*obj, "price_cents", item.price_cents, req, error))
            return std::move(*error);
        if (item.qty <= 0 || item.price_cents < 0)
            return bad_request("qty must be positive and price_cents not negative", req.version());
        items.push_back(std::move(item));
    }
    auto computed = items_total(items);
    if (!computed)
        return bad_request("the order total overflows", req.version());
    std::int64_t total = *computed;
    if (body.contains("total_cents")) {
        if (!int_member(body, "total_cents", total, req, error))
            return std::move(*error);
        if (total != *computed)
            return problem(422, "urn:idemgate:order-service:total-mismatch", "Total mismatch",
                           "total_cents " + std::to_string(total) + " is not the sum of the items (" +
                               std::to_string(*computed) + ")",
                           req.version());
    }

    order created;
    if (auto ec = store_.create_order(std::move(items), total, "create_order", created))
        return storage_failure(ec, req.version());
    auto res = json_response(
        http::status::created,
        {{"id", created.id}, {"status", to_string(created.status)}, {"total_cents", created.total_cents}},
        req.version());
    res.set(http::field::location, std::string(orders_prefix) + "/" + created.id);
    return res;
}

http_response api::get_order(const http_request& req, std::string_view id)
{
    std::optional<order> found;
    if (auto ec = store_.find_order(id, found))
        return storage_failure(ec, req.version());
    if (!found)
        return not_found("no order " + std::string(id), req.version());
    return json_response(http::status::ok, to_json(*found), req.version());
}

http_response api::pay(const http_request& req, std::string_view order_id, bool webhook)
{
    std::optional<http_response> error;
    json::object body;
    if (!parse_object(req, body, error))
        return std::move(*error);
    std::string webhook_order_id;
    if (webhook) {
        if (!string_member(body, "order_id", 64, webhook_order_id, req, error))
            return std::move(*error);
        order_id = webhook_order_id;
    }
    payment_request request;
    if (!int_member(body, "amount_cents", request.amount_cents, req, error) ||
        !string_member(body, "provider_ref", max_provider_ref, request.provider_ref, req, error))
        return std::move(*error);
    if (auto it = req.find(provider_delay_header); it != req.end()) {
        // The handler runs on the database pool, not on an I/O thread: waiting here delays only
        // this request.
        int ms = 0;
        auto v = it->value();
        auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), ms);
        if (ec != std::errc{} || end != v.data() + v.size() || ms < 0 || ms > 10000) {
            std::string detail = provider_delay_header;
            detail += " must be 0-10000 (milliseconds)";
            return problem(400, "about:blank", "Bad Request", detail, req.version());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    }

    auto result = store_.mark_paid(order_id, request, webhook ? payment_source::webhook : payment_source::api,
                                   webhook ? "webhook" : "pay");
    if (result.ec)
        return storage_failure(result.ec, req.version());
    if (!result.order_found)
        return not_found("no order " + std::string(order_id), req.version());

    const auto& o = result.current;
    switch (result.decision) {
    case payment_decision::record_payment:
    case payment_decision::already_paid: {
        bool first = result.decision == payment_decision::record_payment;
        json::object out{
            {"result", to_string(result.decision)},
            {"payment", to_json(*result.recorded)},
            {"order", {{"id", o.id}, {"status", to_string(o.status)}, {"total_cents", o.total_cents}}}};
        return json_response(first ? http::status::created : http::status::ok, out, req.version());
    }
    case payment_decision::ref_conflict:
        return problem(409, "urn:idemgate:order-service:payment-conflict", "Payment conflict",
                       "order " + o.id + " is " + std::string(to_string(o.status)) + " and provider_ref " +
                           request.provider_ref + " is not its payment (or is already used by another order)",
                       req.version());
    case payment_decision::invalid_state:
        return problem(409, "urn:idemgate:order-service:invalid-state", "Invalid order state",
                       "order " + o.id + " is " + std::string(to_string(o.status)) +
                           "; payments are accepted only in INVENTORY_RESERVED",
                       req.version());
    case payment_decision::amount_mismatch:
        return problem(422, "urn:idemgate:order-service:amount-mismatch", "Amount mismatch",
                       "amount_cents " + std::to_string(request.amount_cents) + " is not the order total " +
                           std::to_string(o.total_cents),
                       req.version());
    }
    return problem(500, "about:blank", "Internal Server Error", "unknown decision", req.version());
}

http_response api::cancel(const http_request& req, std::string_view order_id)
{
    bool found = false;
    bool cancelled = false;
    if (auto ec = store_.cancel_order(order_id, found, cancelled))
        return storage_failure(ec, req.version());
    if (!found)
        return not_found("no order " + std::string(order_id), req.version());
    if (!cancelled)
        return problem(409, "urn:idemgate:order-service:invalid-state", "Invalid order state",
                       "only an INVENTORY_RESERVED order can be cancelled", req.version());
    return json_response(http::status::ok, {{"id", order_id}, {"status", "CANCELLED"}}, req.version());
}

http_response api::stats(const http_request& req)
{
    store_stats s;
    if (auto ec = store_.stats(s))
        return storage_failure(ec, req.version());
    json::object executions;
    // Always present, so a client can read them without checking.
    for (const char* name :
         {"create_order", "pay", "webhook", "inbox_applied", "inbox_duplicate", "inbox_failed"})
        executions[name] = 0;
    for (const auto& [name, count] : s.executions)
        executions[name] = count;
    return json_response(http::status::ok,
                         {{"executions", std::move(executions)},
                          {"payments", s.payments},
                          {"orders", s.orders},
                          {"inbox", s.inbox}},
                         req.version());
}

} // namespace idemgate::order_service
