// SPDX-License-Identifier: Apache-2.0
#include <charconv>
#include <idemgate/loadtest/expectations.hpp>
#include <idemgate/loadtest/options.hpp>

namespace idemgate::loadtest {

std::optional<status_set> parse_status_list(std::string_view text, std::string& error)
{
    status_set out;
    while (!text.empty()) {
        auto comma = text.find(',');
        std::string_view item = text.substr(0, comma);
        text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
        while (!item.empty() && item.front() == ' ')
            item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ')
            item.remove_suffix(1);
        if (item.size() == 3 && item[0] >= '1' && item[0] <= '5' && (item[1] == 'x' || item[1] == 'X') &&
            (item[2] == 'x' || item[2] == 'X')) {
            unsigned first = static_cast<unsigned>(item[0] - '0') * 100;
            for (unsigned c = first; c < first + 100; ++c)
                out.set(c);
            continue;
        }
        unsigned code = 0;
        auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), code);
        if (ec != std::errc{} || ptr != item.data() + item.size() || code < 100 || code > 599) {
            // Built with +=: GCC 12 warns falsely (-Wstringop-overflow) on "..." + std::string(...).
            error.assign(1, '"');
            error += item;
            error += "\" is not a status (100-599) or a class (2xx)";
            return std::nullopt;
        }
        out.set(code);
    }
    if (out.none()) {
        error = "no status given";
        return std::nullopt;
    }
    return out;
}

status_set default_expected_statuses(workload mode)
{
    status_set s;
    for (unsigned c = 100; c < 400; ++c)
        s.set(c);
    if (mode == workload::storm)
        s.set(409);
    return s;
}

std::string describe(const status_set& s)
{
    std::string out;
    auto add = [&](const std::string& item) {
        if (!out.empty())
            out += ", ";
        out += item;
    };
    for (unsigned cls = 1; cls <= 5; ++cls) {
        unsigned first = cls * 100, set = 0;
        for (unsigned c = first; c < first + 100; ++c)
            set += s.test(c) ? 1 : 0;
        if (set == 100) {
            add(std::to_string(cls) + "xx");
            continue;
        }
        for (unsigned c = first; c < first + 100; ++c)
            if (s.test(c))
                add(std::to_string(c));
    }
    return out.empty() ? "nothing" : out;
}

std::string describe_answer(const boost::beast::http::response<boost::beast::http::string_body>& res)
{
    std::string out = std::to_string(res.result_int()) + " " + std::string(res.reason());
    std::string_view body = res.body();
    if (!body.empty()) {
        out += ": ";
        out += body.substr(0, 300);
        if (body.size() > 300)
            out += "...";
    }
    for (auto& c : out)
        if (c == '\n' || c == '\r')
            c = ' ';
    return out;
}

std::string hint_for(unsigned status, std::string_view slug, const options& o)
{
    if (slug == "missing-tenant")
        return "the route scopes keys by tenant: pass --tenant NAME (header " + o.tenant_header +
               ", or --tenant-header)";
    if (slug == "invalid-tenant")
        return "the tenant value was refused: check --tenant";
    if (slug == "missing-idempotency-key")
        return "the route requires a key in another header: set --key-header";
    if (slug == "invalid-idempotency-key")
        return "the route refuses these keys: check --key-prefix against the route's key format";
    if (slug == "tenant-quota-exceeded" || status == 429)
        return "the target is rate-limiting this client: lower --rate or --connections, or raise the "
               "tenant's limits; a rate measured over refusals is not a throughput";
    if (slug == "request-in-flight" || slug == "outcome-unknown")
        return "keys were still in flight or held: use a fresh --key-prefix, or --mode storm for duplicates";
    if (slug == "idempotency-key-reused")
        return "keys were used before with another request: use a fresh --key-prefix (the default is random)";
    if (slug == "store-unavailable" || status == 503)
        return "the gateway could not reach its store: check /readyz on its admin listener";
    if (status == 404 || status == 405)
        return "check the URL's path and --method against the gateway's routes";
    if (status == 401 || status == 403)
        return "the target wants credentials: add them with -H";
    if (status == 413 || status == 431)
        return "the request is over the target's limits: shorten --body or the headers";
    if (status == 400)
        return "the target refused the request: see the body above";
    if (status >= 500)
        return "the target or its upstream failed: see the body above and the gateway's log";
    return {};
}

} // namespace idemgate::loadtest
