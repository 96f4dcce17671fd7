// SPDX-License-Identifier: Apache-2.0
// span_fields' lookups, the grouping of a parsed head's lines, and the members of Beast's Fields
// concept: the start line's method, target or reason, and the framing fields read and edited (the
// storage and the edits are in span_fields.cpp).
#include <algorithm>
#include <boost/beast/core/detail/temporary_buffer.hpp>
#include <boost/beast/core/static_string.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/rfc7230.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <limits>
#include <stdexcept>
#include <vector>

namespace idemgate::gateway {

namespace beast = boost::beast;
namespace http = boost::beast::http;

std::uint32_t span_fields::find_index(field f, std::string_view name) const noexcept
{
    for (auto i = head_; i != none; i = lines()[i].next) {
        const line& l = lines()[i];
        if (f != field::unknown
                ? l.name == f
                : l.name_size == name.size() &&
                      beast::iequals(std::string_view(bytes() + l.name_offset, l.name_size), name))
            return i;
    }
    return none;
}

span_fields::const_iterator span_fields::find(field name) const noexcept
{
    return {this, find_index(name, {})};
}

span_fields::const_iterator span_fields::find(std::string_view name) const noexcept
{
    return {this, find_index(field::unknown, name)};
}

std::size_t span_fields::count(field name) const noexcept
{
    std::size_t n = 0;
    for (auto i = head_; i != none; i = lines()[i].next)
        n += lines()[i].name == name ? 1 : 0;
    return n;
}

std::size_t span_fields::count(std::string_view name) const noexcept
{
    auto [first, last] = equal_range(name);
    std::size_t n = 0;
    for (; first != last; ++first)
        ++n;
    return n;
}

std::pair<span_fields::const_iterator, span_fields::const_iterator>
span_fields::equal_range(field name) const noexcept
{
    auto i = find_index(name, {});
    if (i == none)
        return {end(), end()};
    auto j = i;
    while (j != none && lines()[j].name == name)
        j = lines()[j].next;
    return {{this, i}, {this, j}};
}

std::pair<span_fields::const_iterator, span_fields::const_iterator>
span_fields::equal_range(std::string_view name) const noexcept
{
    auto i = find_index(field::unknown, name);
    if (i == none)
        return {end(), end()};
    auto j = i;
    while (j != none && lines()[j].name_size == name.size() &&
           beast::iequals(std::string_view(bytes() + lines()[j].name_offset, lines()[j].name_size), name))
        j = lines()[j].next;
    return {{this, i}, {this, j}};
}

std::string_view span_fields::at(field name) const
{
    auto i = find_index(name, {});
    if (i == none)
        throw std::out_of_range{"field not found"};
    return line_at(i).value();
}

std::string_view span_fields::at(std::string_view name) const
{
    auto i = find_index(field::unknown, name);
    if (i == none)
        throw std::out_of_range{"field not found"};
    return line_at(i).value();
}

std::string_view span_fields::operator[](field name) const noexcept
{
    auto i = find_index(name, {});
    return i == none ? std::string_view{} : line_at(i).value();
}

std::string_view span_fields::operator[](std::string_view name) const noexcept
{
    auto i = find_index(field::unknown, name);
    return i == none ? std::string_view{} : line_at(i).value();
}

void span_fields::group_lines()
{
    if (!ungrouped_)
        return;
    ungrouped_ = false;
    // Each line's group is its name's first position: lines sorted by name, then by position,
    // give each name's first; then the lines are ordered by (group, position), which is where
    // insert() would have put them.
    struct entry {
        std::uint32_t index;
        std::uint32_t position;
        std::uint32_t group;
    };
    std::vector<entry> lines_now;
    lines_now.reserve(live_);
    for (auto i = head_; i != none; i = lines()[i].next)
        lines_now.push_back({i, static_cast<std::uint32_t>(lines_now.size()), 0});
    auto name_of = [&](const entry& e) {
        const line& l = lines()[e.index];
        return std::string_view(bytes() + l.name_offset, l.name_size);
    };
    std::vector<entry> by_name = lines_now;
    std::sort(by_name.begin(), by_name.end(), [&](const entry& a, const entry& b) {
        const auto x = name_of(a);
        const auto y = name_of(b);
        if (beast::iequals(x, y))
            return a.position < b.position;
        return beast::iless{}(x, y);
    });
    for (std::size_t k = 0; k < by_name.size(); ++k) {
        const bool first = k == 0 || !beast::iequals(name_of(by_name[k]), name_of(by_name[k - 1]));
        lines_now[by_name[k].position].group =
            first ? by_name[k].position : lines_now[by_name[k - 1].position].group;
    }
    std::stable_sort(lines_now.begin(), lines_now.end(),
                     [](const entry& a, const entry& b) { return a.group < b.group; });
    auto prev = none;
    for (const auto& e : lines_now) {
        lines()[e.index].prev = prev;
        if (prev == none)
            head_ = e.index;
        else
            lines()[prev].next = e.index;
        prev = e.index;
    }
    lines()[prev].next = none;
    tail_ = prev;
}

// The start line's method, target or reason (Beast's Fields concept).

void span_fields::set_start(span& which, std::string_view s)
{
    if (s.empty()) {
        which = {};
        return;
    }
    if (s.size() > std::numeric_limits<std::uint32_t>::max() / 4)
        throw std::length_error("start line too large");
    std::size_t old_size = 0;
    char* old = make_room(0, holds(s) ? 0 : s.size(), old_size);
    which = place(s);
    if (old != nullptr)
        retire(old, old_size);
}

void span_fields::set_method_impl(std::string_view s)
{
    set_start(method_, s);
}

void span_fields::set_target_impl(std::string_view s)
{
    set_start(target_or_reason_, s);
}

void span_fields::set_reason_impl(std::string_view s)
{
    set_start(target_or_reason_, s);
}

// As basic_fields defines them (boost/beast/http/impl/fields.hpp, Boost 1.81).

bool span_fields::get_chunked_impl() const
{
    auto const te = http::token_list{(*this)[field::transfer_encoding]};
    for (auto it = te.begin(); it != te.end();) {
        auto const next = std::next(it);
        if (next == te.end())
            return beast::iequals(*it, "chunked");
        it = next;
    }
    return false;
}

bool span_fields::get_keep_alive_impl(unsigned version) const
{
    auto const it = find(field::connection);
    if (version < 11) {
        if (it == end())
            return false;
        return http::token_list{it->value()}.exists("keep-alive");
    }
    if (it == end())
        return true;
    return !http::token_list{it->value()}.exists("close");
}

bool span_fields::has_content_length_impl() const noexcept
{
    return find_index(field::content_length, {}) != none;
}

void span_fields::set_chunked_impl(bool value)
{
    beast::detail::temporary_buffer buf;
    auto it = find(field::transfer_encoding);
    if (value) {
        if (it == end()) {
            set(field::transfer_encoding, "chunked");
            return;
        }
        auto const te = http::token_list{it->value()};
        for (auto itt = te.begin();;) {
            auto const next = std::next(itt);
            if (next == te.end()) {
                if (beast::iequals(*itt, "chunked"))
                    return; // already set
                break;
            }
            itt = next;
        }
        buf.append(it->value(), ", chunked");
        set(field::transfer_encoding, buf.view());
        return;
    }
    if (it == end())
        return;
    http::detail::filter_token_list_last(buf, it->value(), {"chunked", {}});
    if (!buf.empty())
        set(field::transfer_encoding, buf.view());
    else
        erase(field::transfer_encoding);
}

void span_fields::set_content_length_impl(const boost::optional<std::uint64_t>& value)
{
    if (!value) {
        erase(field::content_length);
        return;
    }
    auto s = beast::to_static_string(*value);
    set(field::content_length, beast::string_view(s.data(), s.size()));
}

void span_fields::set_keep_alive_impl(unsigned version, bool keep_alive)
{
    auto const value = (*this)[field::connection];
    beast::detail::temporary_buffer buf;
    http::detail::keep_alive_impl(buf, value, version, keep_alive);
    if (buf.empty())
        erase(field::connection);
    else
        set(field::connection, buf.view());
}

} // namespace idemgate::gateway
