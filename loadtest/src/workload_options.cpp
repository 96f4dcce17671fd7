// SPDX-License-Identifier: Apache-2.0
// The workload options beyond one URL: several weighted targets, bodies from files, rate stages.
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <idemgate/loadtest/options.hpp>
#include <iterator>
#include <sstream>

namespace idemgate::loadtest {

namespace {

std::vector<std::string_view> words(std::string_view text)
{
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
            ++i;
        std::size_t start = i;
        while (i < text.size() && text[i] != ' ' && text[i] != '\t')
            ++i;
        if (i > start)
            out.push_back(text.substr(start, i - start));
    }
    return out;
}

} // namespace

std::string read_body_file(std::string_view flag, const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (path.empty() || !in)
        throw usage_error(std::string(flag) + ": cannot read \"" + path + "\"");
    std::ostringstream bytes;
    bytes << in.rdbuf();
    if (in.bad())
        throw usage_error(std::string(flag) + ": cannot read \"" + path + "\"");
    return bytes.str();
}

request_target parse_target(std::string_view flag, std::string_view text)
{
    request_target t;
    t.text = std::string(text);
    auto w = words(text);
    auto bad = [&](const std::string& what) {
        return usage_error(std::string(flag) + ": \"" + t.text + "\": " + what);
    };
    if (w.size() < 2 || w.size() > 4)
        throw bad("not 'METHOD URL [@BODY] [weight]'");
    t.method = std::string(w[0]);
    for (char c : t.method)
        if (!std::isalpha(static_cast<unsigned char>(c)) && c != '-' && c != '_')
            throw bad("\"" + t.method + "\" is not a method");
    std::string error;
    auto url = parse_url(w[1], error);
    if (!url)
        throw bad(error);
    t.url = *url;
    for (std::size_t i = 2; i < w.size(); ++i) {
        if (w[i].front() == '@' && !t.body && i == 2) {
            t.body = read_body_file(flag, std::string(w[i].substr(1)));
            continue;
        }
        unsigned weight = 0;
        auto [ptr, ec] = std::from_chars(w[i].data(), w[i].data() + w[i].size(), weight);
        if (i + 1 != w.size() || ec != std::errc{} || ptr != w[i].data() + w[i].size() || weight == 0 ||
            weight > 1000000)
            throw bad("\"" + std::string(w[i]) + "\" is neither @BODYFILE nor a weight from 1 to 1000000");
        t.weight = weight;
    }
    return t;
}

std::vector<request_target> read_targets_file(const std::string& path)
{
    std::ifstream in(path);
    if (path.empty() || !in)
        throw usage_error("--targets: cannot read \"" + path + "\"");
    std::vector<request_target> out;
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        auto w = words(line);
        if (w.empty() || w.front().front() == '#')
            continue;
        out.push_back(parse_target("--targets " + path + ":" + std::to_string(number), line));
    }
    if (out.empty())
        throw usage_error("--targets: \"" + path + "\" has no target line");
    return out;
}

std::vector<rate_stage> parse_stages(std::string_view text)
{
    std::vector<rate_stage> out;
    std::string_view rest = text;
    while (true) {
        auto comma = rest.find(',');
        std::string_view item = rest.substr(0, comma);
        auto colon = item.find(':');
        auto bad = [&](const std::string& what) {
            return usage_error("--stages: \"" + std::string(item) + "\" " + what +
                               " (stages are DURATION:RATE,..., e.g. 10s:1000,30s:5000)");
        };
        if (colon == std::string_view::npos)
            throw bad("is not DURATION:RATE");
        rate_stage s;
        auto d = parse_duration(item.substr(0, colon));
        if (!d)
            throw bad("does not start with a duration");
        s.duration = *d;
        std::string_view rate = item.substr(colon + 1);
        auto [ptr, ec] = std::from_chars(rate.data(), rate.data() + rate.size(), s.rate);
        if (rate.empty() || ec != std::errc{} || ptr != rate.data() + rate.size() || !(s.rate >= 0) ||
            !std::isfinite(s.rate) || s.rate > 1e8)
            throw bad("does not end with a rate from 0 to 100000000 requests/s");
        out.push_back(s);
        if (comma == std::string_view::npos)
            break;
        rest = rest.substr(comma + 1);
    }
    if (stage_requests(out) < 1)
        throw usage_error("--stages: \"" + std::string(text) + "\" sends no request");
    return out;
}

double stage_requests(const std::vector<rate_stage>& stages)
{
    double n = 0, previous = 0;
    for (const auto& s : stages) {
        n += (previous + s.rate) / 2 * std::chrono::duration<double>(s.duration).count();
        previous = s.rate;
    }
    return n;
}

std::optional<double> stage_offset_seconds(const std::vector<rate_stage>& stages, double n)
{
    double before = 0, start = 0, r0 = 0;
    for (const auto& s : stages) {
        double d = std::chrono::duration<double>(s.duration).count();
        double r1 = s.rate;
        double count = (r0 + r1) / 2 * d;
        if (n < before + count) {
            // Requests due by tau into the stage: r0 tau + (r1 - r0) tau^2 / 2d = m; the root in
            // the form that holds for ramps up, down and flat alike.
            double m = n - before;
            double a = (r1 - r0) / (2 * d);
            double root = std::sqrt(std::max(0.0, r0 * r0 + 4 * a * m));
            double tau = r0 + root > 0 ? 2 * m / (r0 + root) : 0;
            return start + std::min(tau, d);
        }
        before += count;
        start += d;
        r0 = r1;
    }
    return std::nullopt;
}

} // namespace idemgate::loadtest
