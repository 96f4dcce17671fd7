// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <cctype>
#include <idemgate/common/record_headers.hpp>
#include <idemgate/loadtest/answer_check.hpp>

namespace idemgate::loadtest {

namespace beast = boost::beast;

namespace {

// The two forms of the gateway's problem types: the URN, and the documentation path it serves
// (relative, or under an operator's base URI: the slug is what follows the last "problems/").
constexpr std::string_view problem_prefix = "\"type\":\"urn:idemgate:problem:";
constexpr std::string_view problem_path = "/.well-known/idempotency/problems/";

char lower_char(char c) noexcept
{
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

bool iless(std::string_view a, std::string_view b) noexcept
{
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(),
                                        [](char x, char y) { return lower_char(x) < lower_char(y); });
}

// Stable insertion sort by name: a handful of headers, and std::stable_sort would allocate.
void sort_by_name(std::vector<std::pair<std::string_view, std::string_view>>& v) noexcept
{
    for (std::size_t i = 1; i < v.size(); ++i) {
        auto item = v[i];
        std::size_t j = i;
        while (j > 0 && iless(item.first, v[j - 1].first)) {
            v[j] = v[j - 1];
            --j;
        }
        v[j] = item;
    }
}

// Where two texts first differ, with a little context on both sides.
std::string difference_of(std::string_view mine, std::string_view first)
{
    std::size_t at = 0;
    while (at < mine.size() && at < first.size() && mine[at] == first[at])
        ++at;
    std::size_t from = at > 24 ? at - 24 : 0;
    auto excerpt = [&](std::string_view s) {
        std::string out = from ? "..." : "";
        out += s.substr(from, 72);
        if (s.size() > from + 72)
            out += "...";
        return "\"" + out + "\"";
    };
    return "differs at byte " + std::to_string(at) + ": " + excerpt(mine) + " (" +
           std::to_string(mine.size()) + " bytes), first answer " + excerpt(first) + " (" +
           std::to_string(first.size()) + " bytes)";
}

} // namespace

std::string_view gateway_problem_slug(const response& res) noexcept
{
    auto type = res[http::field::content_type];
    if (!beast::iequals(type.substr(0, 24), "application/problem+json"))
        return {};
    std::string_view body = res.body();
    if (auto at = body.find(problem_prefix); at != std::string_view::npos) {
        body.remove_prefix(at + problem_prefix.size());
    } else {
        auto type_at = body.find("\"type\":\"");
        if (type_at == std::string_view::npos)
            return {};
        body.remove_prefix(type_at + 8);
        auto value_end = body.find('"');
        if (value_end == std::string_view::npos)
            return {};
        std::string_view value = body.substr(0, value_end);
        auto path_at = value.rfind(problem_path);
        if (path_at == std::string_view::npos)
            return {};
        return value.substr(path_at + problem_path.size());
    }
    auto end = body.find('"');
    return end == std::string_view::npos ? std::string_view{} : body.substr(0, end);
}

answer_kind classify(const response& res) noexcept
{
    if (!gateway_problem_slug(res).empty())
        return answer_kind::gateway_problem;
    if (res.result_int() >= 500)
        return answer_kind::not_recorded;
    return answer_kind::recorded;
}

bool marked_replayed(const response& res) noexcept
{
    auto it = res.find("Idempotent-Replayed");
    return it != res.end() && beast::iequals(it->value(), "true");
}

bool never_compared(std::string_view name) noexcept
{
    return excluded_from_record(name);
}

answer_checker::answer_checker(std::uint64_t keys, std::string key_prefix,
                               std::vector<std::string> ignored_headers)
    : keys_(keys), key_prefix_(std::move(key_prefix)), slots_(new slot[keys]),
      ignored_(std::move(ignored_headers))
{
}

answer_checker::~answer_checker()
{
    for (std::uint64_t i = 0; i < keys_; ++i)
        delete slots_[i].first.load(std::memory_order_relaxed);
}

void answer_checker::compared_headers(const response& res,
                                      std::vector<std::pair<std::string_view, std::string_view>>& out) const
{
    out.clear();
    for (const auto& f : res) {
        std::string_view name = f.name_string();
        if (never_compared(name))
            continue;
        bool ignored = std::any_of(ignored_.begin(), ignored_.end(),
                                   [&](const std::string& n) { return beast::iequals(name, n); });
        if (!ignored)
            out.emplace_back(name, f.value());
    }
    sort_by_name(out);
}

void answer_checker::note(std::string& example, std::string description)
{
    std::lock_guard lock(example_mutex_);
    if (example.empty())
        example = std::move(description);
}

bool answer_checker::same_as_first(const first_answer& first, const response& res,
                                   std::vector<std::pair<std::string_view, std::string_view>>& scratch,
                                   std::string& difference) const
{
    if (res.result_int() != first.status) {
        difference =
            "status " + std::to_string(res.result_int()) + ", first answer " + std::to_string(first.status);
        if (auto slug = gateway_problem_slug(res); !slug.empty())
            difference += " (gateway problem " + std::string(slug) + ")";
        return false;
    }
    if (res.reason() != first.reason) {
        difference = "reason \"" + std::string(res.reason()) + "\", first answer \"" + first.reason + "\"";
        return false;
    }
    if (res.body() != first.body) {
        difference = "body " + difference_of(res.body(), first.body);
        return false;
    }
    compared_headers(res, scratch);
    std::size_t n = std::min(scratch.size(), first.headers.size());
    for (std::size_t i = 0; i < n; ++i) {
        const auto& [name, value] = scratch[i];
        const auto& [first_name, first_value] = first.headers[i];
        if (!beast::iequals(name, first_name)) {
            // The lists are sorted by name: the smaller name is the one the other answer lacks.
            if (iless(name, first_name))
                difference = "header " + std::string(name) + " not in the first answer";
            else
                difference = "header " + first_name + " of the first answer missing";
            return false;
        }
        if (value != first_value) {
            difference = "header " + first_name + " " + difference_of(value, first_value);
            return false;
        }
    }
    if (scratch.size() > n) {
        difference = "header " + std::string(scratch[n].first) + " not in the first answer";
        return false;
    }
    if (first.headers.size() > n) {
        difference = "header " + first.headers[n].first + " of the first answer missing";
        return false;
    }
    return true;
}

void answer_checker::observe_table_key(std::uint64_t key, std::string_view key_name, const response& res,
                                       std::vector<std::pair<std::string_view, std::string_view>>& scratch)
{
    slot& s = slots_[key];
    auto kind = classify(res);
    first_answer* first = s.first.load(std::memory_order_acquire);
    if (kind == answer_kind::recorded) {
        // A key runs upstream once: every executed (unmarked) answer after the first is a breach,
        // whatever order the answers arrive in.
        if (!marked_replayed(res) && s.executed.fetch_add(1, std::memory_order_relaxed) != 0) {
            replays_unmarked_.fetch_add(1, std::memory_order_relaxed);
            note(first_unmarked_,
                 "key " + std::string(key_name) + " was executed again: a second answer (status " +
                     std::to_string(res.result_int()) + ") without Idempotent-Replayed: true");
        }
        if (first == nullptr) {
            auto mine = std::make_unique<first_answer>();
            mine->status = res.result_int();
            mine->reason = std::string(res.reason());
            mine->body = res.body();
            compared_headers(res, scratch);
            for (const auto& [name, value] : scratch) {
                std::string lower(name);
                for (auto& c : lower)
                    c = lower_char(c);
                mine->headers.emplace_back(std::move(lower), std::string(value));
            }
            if (s.first.compare_exchange_strong(first, mine.get(), std::memory_order_acq_rel,
                                                std::memory_order_acquire)) {
                mine.release();
                return;
            }
            // Another thread published first; `first` now points at its answer.
        }
    } else if (first == nullptr) {
        return; // a 5xx or a gateway problem before any recorded answer: nothing to compare yet
    }
    replays_checked_.fetch_add(1, std::memory_order_relaxed);
    std::string difference;
    if (!same_as_first(*first, res, scratch, difference)) {
        replays_mismatched_.fetch_add(1, std::memory_order_relaxed);
        note(first_mismatch_, "key " + std::string(key_name) + ": " + difference);
    }
}

void answer_checker::observe_new_key(std::string_view key_name, const response& res)
{
    if (classify(res) != answer_kind::recorded)
        return;
    if (marked_replayed(res)) {
        unexpected_new_keys_.fetch_add(1, std::memory_order_relaxed);
        note(first_unexpected_, "new key " + std::string(key_name) + " was answered as a replay");
    } else {
        new_keys_executed_.fetch_add(1, std::memory_order_relaxed);
    }
}

bool answer_checker::has_first(std::uint64_t key) const noexcept
{
    return slots_[key].first.load(std::memory_order_acquire) != nullptr;
}

std::uint64_t answer_checker::failures() const noexcept
{
    return replays_mismatched_.load(std::memory_order_relaxed) +
           replays_unmarked_.load(std::memory_order_relaxed) +
           unexpected_new_keys_.load(std::memory_order_relaxed);
}

check_totals answer_checker::totals() const
{
    check_totals t;
    t.replays_checked = replays_checked_.load();
    t.replays_mismatched = replays_mismatched_.load();
    t.replays_unmarked = replays_unmarked_.load();
    t.unexpected_replays = unexpected_new_keys_.load();
    t.new_keys_executed = new_keys_executed_.load();
    std::uint64_t example = keys_;
    for (std::uint64_t i = 0; i < keys_; ++i) {
        auto executed = slots_[i].executed.load();
        bool answered = slots_[i].first.load() != nullptr;
        if (executed >= 1)
            ++t.keys_executed;
        if (executed > 1)
            ++t.keys_executed_twice;
        if (!answered)
            ++t.keys_without_answer;
        if (answered && executed == 0) {
            ++t.unexpected_replays;
            example = std::min(example, i);
        }
    }
    std::lock_guard lock(example_mutex_);
    t.first_mismatch = first_mismatch_;
    t.first_unmarked = first_unmarked_;
    t.first_unexpected = first_unexpected_;
    if (t.first_unexpected.empty() && example < keys_)
        t.first_unexpected = "key " + key_prefix_ + "-" + std::to_string(example) +
                             " got only replays: it existed before the run (use a fresh --key-prefix)";
    return t;
}

} // namespace idemgate::loadtest
