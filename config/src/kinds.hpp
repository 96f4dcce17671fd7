// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kinds of value a key takes (keys.hpp's rows): read(loader, map, key, member) reads `key` of
// `map` into the member, reporting each problem at the key's path (an absent key keeps the
// default); print(emitter, member) writes the value as --print-config spells it, which read
// takes back.
#include "loader.hpp"

#include <boost/describe/enum_to_string.hpp>
#include <boost/describe/enumerators.hpp>
#include <boost/mp11/algorithm.hpp>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::config::detail {

using map_view = loader::map_view;

// value_text.cpp: the spellings --print-config writes.
std::string duration_text(duration d); // the largest unit that divides exactly: 1500 -> "1500ms"
std::string size_text(std::size_t n);
std::string endpoint_text(const endpoint& e); // an IPv6 literal in brackets
std::string number_text(double v);
void emit(YAML::Emitter& out, const std::string& v);
void emit(YAML::Emitter& out, unsigned v);
void emit(YAML::Emitter& out, const endpoint& v);

struct a_bool {
    void read(loader& l, const map_view& m, std::string_view k, bool& out) const
    {
        auto text = l.scalar(m, k, "a boolean");
        if (text && (*text == "true" || *text == "false"))
            out = *text == "true";
        else if (text)
            l.problem(m.path_of(k), quote(*text) + " is not a boolean (use true or false)");
    }
    void print(YAML::Emitter& out, bool v) const { out << v; }
};

inline std::string must_not_be_empty(std::string_view text)
{
    return text.empty() ? "must not be empty" : "";
}

struct a_string {
    const char* expected = "a string";
    std::string (*problem)(std::string_view) = nullptr; // what is wrong with a value, "" when nothing
    bool required = false;
    bool quoted = false; // printed in double quotes
    bool file = false;   // a file's path: a relative one is taken from the configuration file's folder
    void read(loader& l, const map_view& m, std::string_view k, std::string& out) const
    {
        auto text = l.scalar(m, k, expected);
        if (!text && required && !m.find(k))
            l.problem(m.path_of(k), "required key is missing");
        if (!text)
            return;
        if (auto why = problem ? problem(*text) : std::string(); !why.empty())
            l.problem(m.path_of(k), why);
        else
            out = file ? l.file_path(*text) : std::move(*text);
    }
    void print(YAML::Emitter& out, const std::string& v) const
    {
        if (quoted)
            out << YAML::DoubleQuoted;
        out << v;
    }
};

// A header field name, e.g. Idempotency-Key (RFC 9110 5.1: a token); `empty`: "" turns it off.
struct a_header {
    bool empty = false;
    void read(loader& l, const map_view& m, std::string_view k, std::string& out) const
    {
        auto text = l.scalar(m, k, "a header name");
        if (text && text->empty() && empty)
            out.clear();
        else if (text && !is_token(*text))
            l.problem(m.path_of(k), quote(*text) + " is not a header name");
        else if (text)
            out = std::move(*text);
    }
    void print(YAML::Emitter& out, const std::string& v) const { out << v; }
};

struct an_int {
    std::uint64_t min = 0;
    std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    template<class Int>
    void read(loader& l, const map_view& m, std::string_view k, Int& out) const
    {
        auto text = l.scalar(m, k, "an integer");
        if (!text)
            return;
        bool negative = !text->empty() && text->front() == '-';
        auto digits = std::string_view(*text).substr(negative ? 1 : 0);
        bool all_digits = !digits.empty();
        for (char c : digits)
            all_digits = all_digits && is_digit(c);
        auto value = parse_decimal(digits);
        if (!all_digits)
            l.problem(m.path_of(k), quote(*text) + " is not an integer");
        else if (negative || !value || *value < min || *value > max)
            l.problem(m.path_of(k),
                      *text + " out of range (" + std::to_string(min) + "-" + std::to_string(max) + ")");
        else
            out = static_cast<Int>(*value);
    }
    template<class Int>
    void print(YAML::Emitter& out, Int v) const
    {
        out << v;
    }
};

struct a_duration {
    bool zero = false; // 0 allowed (it turns something off)
    void read(loader& l, const map_view& m, std::string_view k, duration& out) const
    {
        auto text = l.scalar(m, k, "a duration");
        if (!text)
            return;
        auto value = zero && *text == "0" ? std::optional<duration>(0) : parse_duration(*text);
        if (!value && !text->empty() && text->front() == '-')
            l.problem(m.path_of(k), quote(*text) + " is negative (a duration is 0 or more, e.g. 30s)");
        else if (!value)
            l.problem(m.path_of(k), quote(*text) + " is not a duration");
        else if (!zero && value->count() == 0)
            l.problem(m.path_of(k), "must be greater than 0");
        else
            out = *value;
    }
    void print(YAML::Emitter& out, duration v) const { out << duration_text(v); }
};

struct a_size {
    bool zero = true;
    std::size_t min = 0;
    std::size_t max = std::numeric_limits<std::size_t>::max();
    const char* bounds = nullptr; // outside min-max: "must be <bounds>"
    void read(loader& l, const map_view& m, std::string_view k, std::size_t& out) const
    {
        auto text = l.scalar(m, k, "a size");
        auto value = text ? parse_size(*text) : std::nullopt;
        if (text && !value)
            l.problem(m.path_of(k), quote(*text) + " is not a size (use B, KiB, MiB, GiB)");
        else if (value && !zero && *value == 0)
            l.problem(m.path_of(k), "must be greater than 0");
        else if (value && (*value < min || *value > max))
            l.problem(m.path_of(k), std::string("must be ") + bounds);
        else if (value)
            out = *value;
    }
    void print(YAML::Emitter& out, std::size_t v) const { out << size_text(v); }
};

struct an_endpoint {
    void read(loader& l, const map_view& m, std::string_view k, endpoint& out) const
    {
        auto text = l.scalar(m, k, "an endpoint (host:port)");
        auto checked = text ? check_endpoint(*text) : endpoint_check{};
        if (text && !checked.value)
            l.problem(m.path_of(k), checked.problem);
        else if (text)
            out = std::move(*checked.value);
    }
    void print(YAML::Emitter& out, const endpoint& v) const { out << endpoint_text(v); }
};

// A number in plain decimal, 0 to `max`: "<text> is not <what>" otherwise.
struct a_number {
    const char* expected;
    const char* what;
    double max = std::numeric_limits<double>::max();
    void read(loader& l, const map_view& m, std::string_view k, double& out) const
    {
        auto text = l.scalar(m, k, expected);
        auto value = text ? parse_rate(*text) : std::nullopt;
        if (text && (!value || *value > max))
            l.problem(m.path_of(k), quote(*text) + " is not " + what);
        else if (value)
            out = *value;
    }
    void print(YAML::Emitter& out, double v) const { out << number_text(v); }
};

// The name of one of the enumerators of Enum (a BOOST_DEFINE_ENUM_CLASS): "<text> is not
// <what> (use a, b or c)" otherwise. read_given: true when the key was given and valid.
struct a_choice {
    const char* what;
    // A name accepted but not offered in the message (a build's test-only value); nullptr: none.
    const char* unlisted = nullptr;
    template<class Enum>
    bool read_given(loader& l, const map_view& m, std::string_view k, Enum& out) const
    {
        using choices = boost::describe::describe_enumerators<Enum>;
        auto text = l.scalar(m, k, "a string");
        if (!text)
            return false;
        bool found = false;
        std::vector<std::string_view> offered;
        boost::mp11::mp_for_each<choices>([&](auto choice) {
            if (*text == choice.name && !found) {
                out = choice.value;
                found = true;
            }
            if (!unlisted || std::string_view(choice.name) != unlisted)
                offered.push_back(choice.name);
        });
        std::string names;
        for (std::size_t i = 0; i < offered.size(); ++i) {
            names += i == 0 ? "" : i + 1 == offered.size() ? " or " : ", ";
            names += offered[i];
        }
        if (!found)
            l.problem(m.path_of(k), quote(*text) + " is not " + what + " (use " + names + ")");
        return found;
    }
    template<class Enum>
    void read(loader& l, const map_view& m, std::string_view k, Enum& out) const
    {
        read_given(l, m, k, out);
    }
    template<class Enum>
    void print(YAML::Emitter& out, Enum v) const
    {
        out << boost::describe::enum_to_string(v, "");
    }
};

} // namespace idemgate::config::detail
