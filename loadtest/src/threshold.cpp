// SPDX-License-Identifier: Apache-2.0
#include <cctype>
#include <charconv>
#include <cmath>
#include <idemgate/loadtest/report.hpp>
#include <idemgate/loadtest/threshold.hpp>

namespace idemgate::loadtest {

namespace {

bool parse_double(std::string_view text, double& out)
{
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && ptr == text.data() + text.size() && std::isfinite(out);
}

// "5ms", "250us", "250µs", "1.5s", "800ns" in nanoseconds; nullopt without a known unit.
std::optional<double> parse_latency(std::string_view text)
{
    std::size_t digits = 0;
    while (digits < text.size() &&
           (std::isdigit(static_cast<unsigned char>(text[digits])) || text[digits] == '.'))
        ++digits;
    double v = 0;
    if (digits == 0 || !parse_double(text.substr(0, digits), v))
        return std::nullopt;
    std::string_view unit = text.substr(digits);
    if (unit == "ns")
        return v;
    if (unit == "us" || unit == "\xc2\xb5s")
        return v * 1e3;
    if (unit == "ms")
        return v * 1e6;
    if (unit == "s")
        return v * 1e9;
    return std::nullopt;
}

// "\"text\"", appended piece by piece: GCC 12 warns falsely (-Wrestrict) on "..." + std::string.
std::string quoted(std::string_view text)
{
    std::string out(1, '"');
    out += text;
    out += '"';
    return out;
}

} // namespace

std::optional<threshold> parse_threshold(std::string_view text, std::string& error)
{
    threshold t;
    t.text = std::string(text);
    auto op_at = text.find_first_of("<>=");
    if (op_at == std::string_view::npos || op_at == 0) {
        error = "\"" + t.text + "\" is not FIGURE<VALUE (e.g. p99<5ms, rps>1000, errors<0.1%, mismatches==0)";
        return std::nullopt;
    }
    std::string_view name = text.substr(0, op_at), rest = text.substr(op_at);
    struct op_text {
        std::string_view text;
        threshold::comparison op;
    };
    static constexpr op_text ops[] = {{"<=", threshold::comparison::le},
                                      {">=", threshold::comparison::ge},
                                      {"==", threshold::comparison::eq},
                                      {"<", threshold::comparison::lt},
                                      {">", threshold::comparison::gt}};
    std::string_view value;
    bool found = false;
    for (const auto& o : ops)
        if (rest.substr(0, o.text.size()) == o.text) {
            t.op = o.op;
            value = rest.substr(o.text.size());
            found = true;
            break;
        }
    if (!found || value.empty()) {
        error = "\"" + t.text + "\": the comparison is one of < <= > >= == followed by a value";
        return std::nullopt;
    }
    auto fail = [&](std::string what) {
        error = "\"" + t.text + "\": " + std::move(what);
        return std::nullopt;
    };
    bool latency = true;
    if (name == "max") {
        t.what = threshold::figure::max;
    } else if (name == "mean") {
        t.what = threshold::figure::mean;
    } else if (name.size() > 1 && name.front() == 'p') {
        t.what = threshold::figure::percentile;
        if (!parse_double(name.substr(1), t.percentile) || !(t.percentile > 0) || t.percentile > 100)
            return fail("the percentile is p followed by a number above 0 and at most 100 (p50, p99.9)");
    } else {
        latency = false;
        if (name == "rps")
            t.what = threshold::figure::rps;
        else if (name == "errors")
            t.what = threshold::figure::errors;
        else if (name == "mismatches")
            t.what = threshold::figure::mismatches;
        else
            return fail("unknown figure \"" + std::string(name) +
                        "\" (pN, max, mean, rps, errors, mismatches)");
    }
    if (latency) {
        auto ns = parse_latency(value);
        if (!ns)
            return fail(quoted(value) + " is not a latency with a unit (ns, us, ms, s)");
        t.bound = *ns;
        return t;
    }
    if (t.what == threshold::figure::errors && value.back() == '%') {
        t.percent = true;
        value.remove_suffix(1);
        if (!parse_double(value, t.bound) || t.bound < 0 || t.bound > 100)
            return fail("the share of errors is 0 to 100 %");
        return t;
    }
    if (!parse_double(value, t.bound) || t.bound < 0)
        return fail(quoted(value) + " is not a number at least 0");
    return t;
}

threshold_outcome evaluate(const threshold& t, const threshold_inputs& in)
{
    threshold_outcome out;
    out.text = t.text;
    const log_histogram empty;
    const log_histogram& h = in.latency ? *in.latency : empty;
    switch (t.what) {
    case threshold::figure::percentile:
        out.observed = static_cast<double>(h.percentile(t.percentile));
        out.observed_text = format_latency(static_cast<std::uint64_t>(out.observed));
        break;
    case threshold::figure::max:
        out.observed = static_cast<double>(h.max());
        out.observed_text = format_latency(h.max());
        break;
    case threshold::figure::mean:
        out.observed = h.mean();
        out.observed_text = format_latency(static_cast<std::uint64_t>(out.observed));
        break;
    case threshold::figure::rps:
        out.observed = in.seconds > 0 ? static_cast<double>(in.answers) / in.seconds : 0;
        out.observed_text = format_fixed(out.observed, 0) + " req/s";
        break;
    case threshold::figure::errors:
        if (t.percent) {
            auto requests = in.answers + in.errors;
            out.observed =
                requests ? 100.0 * static_cast<double>(in.errors) / static_cast<double>(requests) : 0;
            out.observed_text = format_fixed(out.observed, 3) + " % (" + std::to_string(in.errors) + " of " +
                                std::to_string(requests) + " requests)";
        } else {
            out.observed = static_cast<double>(in.errors);
            out.observed_text = std::to_string(in.errors);
        }
        break;
    case threshold::figure::mismatches:
        out.observed = static_cast<double>(in.mismatches);
        out.observed_text = std::to_string(in.mismatches);
        break;
    }
    switch (t.op) {
    case threshold::comparison::lt: out.pass = out.observed < t.bound; break;
    case threshold::comparison::le: out.pass = out.observed <= t.bound; break;
    case threshold::comparison::gt: out.pass = out.observed > t.bound; break;
    case threshold::comparison::ge: out.pass = out.observed >= t.bound; break;
    case threshold::comparison::eq: out.pass = out.observed == t.bound; break;
    }
    return out;
}

} // namespace idemgate::loadtest
