// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/field.hpp>
#include <cstring>
#include <idemgate/common/block_pool.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <limits>
#include <new>
#include <stdexcept>

namespace idemgate::gateway {

namespace {

namespace beast = boost::beast;
namespace http = boost::beast::http;

// A head's block (its lines, then its bytes): classes of 256 bytes up to 4 KiB, a thread keeping
// up to 32 of each, so the heads of a keep-alive connection's requests reuse the blocks of the
// ones before.
using span_blocks = block_pool<256, 16, 32>;

std::size_t block_size_for(std::size_t bytes) noexcept
{
    if (span_blocks::class_of(bytes) >= span_blocks::classes)
        return bytes;
    return span_blocks::block_bytes(span_blocks::class_of(bytes));
}

// basic_fields' limit: a name or value of 65533 bytes or more throws.
constexpr std::size_t max_size = 65533;

std::string_view trim(std::string_view s) noexcept
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

} // namespace

span_fields::~span_fields()
{
    release();
}

// A block the fields moved out of, kept to the end: its first bytes (a line's slot, never viewed)
// link it to the ones retired before.
struct span_fields::retired {
    char* next;
    std::size_t size;
};

void span_fields::retire(char* old, std::size_t size) noexcept
{
    static_assert(sizeof(retired) <= sizeof(line) && alignof(retired) <= alignof(std::max_align_t));
    ::new (old) retired{retired_, size};
    retired_ = old;
}

void span_fields::release() noexcept
{
    if (block_ != nullptr)
        span_blocks::deallocate(block_, block_size_);
    while (retired_ != nullptr) {
        auto* r = reinterpret_cast<retired*>(retired_);
        char* next = r->next;
        span_blocks::deallocate(retired_, r->size);
        retired_ = next;
    }
    block_ = nullptr;
    block_size_ = line_capacity_ = 0;
    forget_lines();
}

void span_fields::forget_lines() noexcept
{
    lines_used_ = bytes_used_ = live_ = 0;
    head_ = tail_ = none;
    names_seen_ = 0;
    ungrouped_ = false;
    method_ = target_or_reason_ = {};
}

span_fields::span_fields(const span_fields& other)
{
    *this = other;
}

span_fields::span_fields(span_fields&& other) noexcept
{
    *this = std::move(other);
}

span_fields& span_fields::operator=(const span_fields& other)
{
    if (this == &other)
        return *this;
    release();
    if (other.block_ == nullptr)
        return *this;
    // The block as it is, erased lines' slots and bytes too: one copy, the same offsets.
    block_ = static_cast<char*>(span_blocks::allocate(other.block_size_));
    std::memcpy(block_, other.block_, other.bytes_begin() + other.bytes_used_);
    take_layout(other);
    return *this;
}

void span_fields::take_layout(const span_fields& other) noexcept
{
    block_size_ = other.block_size_;
    line_capacity_ = other.line_capacity_;
    lines_used_ = other.lines_used_;
    bytes_used_ = other.bytes_used_;
    head_ = other.head_;
    tail_ = other.tail_;
    live_ = other.live_;
    names_seen_ = other.names_seen_;
    ungrouped_ = other.ungrouped_;
    method_ = other.method_;
    target_or_reason_ = other.target_or_reason_;
}

span_fields& span_fields::operator=(span_fields&& other) noexcept
{
    if (this == &other)
        return *this;
    release();
    block_ = std::exchange(other.block_, nullptr);
    retired_ = std::exchange(other.retired_, nullptr);
    take_layout(other);
    other.release();
    return *this;
}

void span_fields::swap(span_fields& other) noexcept
{
    span_fields t(std::move(other));
    other = std::move(*this);
    *this = std::move(t);
}

void span_fields::clear() noexcept
{
    if (block_ != nullptr)
        forget_lines();
}

std::string_view span_fields::adopt(std::string_view head, std::size_t lines)
{
    release();
    // Room for a few lines and bytes more: the gateway adds some fields to a head it read.
    const std::size_t line_room = lines + 4;
    const std::size_t byte_room = head.size() + 96;
    if (line_room > none / 2 || head.size() > std::numeric_limits<std::uint32_t>::max() / 2)
        throw std::length_error("head too large");
    const std::size_t want = block_size_for(line_room * sizeof(line) + byte_room);
    block_ = static_cast<char*>(span_blocks::allocate(want));
    block_size_ = static_cast<std::uint32_t>(want);
    line_capacity_ = static_cast<std::uint32_t>(line_room);
    std::memcpy(block_ + bytes_begin(), head.data(), head.size());
    bytes_used_ = static_cast<std::uint32_t>(head.size());
    return {bytes(), head.size()};
}

bool span_fields::holds(std::string_view s) const noexcept
{
    if (block_ == nullptr || s.empty())
        return false;
    const auto first = reinterpret_cast<std::uintptr_t>(bytes());
    const auto p = reinterpret_cast<std::uintptr_t>(s.data());
    return p >= first && p + s.size() <= first + bytes_used_;
}

span_fields::span span_fields::place(std::string_view s) noexcept
{
    if (s.empty())
        return {};
    if (holds(s))
        return {static_cast<std::uint32_t>(s.data() - bytes()), static_cast<std::uint32_t>(s.size())};
    span out{bytes_used_, static_cast<std::uint32_t>(s.size())};
    std::memcpy(block_ + bytes_begin() + bytes_used_, s.data(), s.size());
    bytes_used_ += static_cast<std::uint32_t>(s.size());
    return out;
}

char* span_fields::make_room(std::size_t lines_wanted, std::size_t extra, std::size_t& old_size)
{
    const std::size_t byte_capacity = block_ == nullptr ? 0 : block_size_ - bytes_begin();
    if (lines_used_ + lines_wanted <= line_capacity_ && bytes_used_ + extra <= byte_capacity)
        return nullptr;
    // A new block: the lines' slots as they are (iterators are indices), the live bytes only.
    std::size_t live_bytes = std::size_t{method_.size} + target_or_reason_.size;
    for (auto i = head_; i != none; i = lines()[i].next)
        live_bytes += std::size_t{lines()[i].name_size} + lines()[i].value_size;
    std::size_t line_room = std::max<std::uint32_t>(line_capacity_, 1); // a retired block's link
    if (lines_used_ + lines_wanted > line_room)
        line_room = std::max<std::size_t>({8, line_room * 2, lines_used_ + lines_wanted});
    const std::size_t byte_room = std::max<std::size_t>(256, (live_bytes + extra) * 2);
    if (line_room > none / 2 || byte_room > std::numeric_limits<std::uint32_t>::max() / 4)
        throw std::length_error("header fields too large");
    const std::size_t want = block_size_for(line_room * sizeof(line) + byte_room);
    char* fresh = static_cast<char*>(span_blocks::allocate(want));
    if (lines_used_ > 0)
        std::memcpy(fresh, block_, std::size_t{lines_used_} * sizeof(line));
    char* const fresh_bytes = fresh + line_room * sizeof(line);
    const char* const old_bytes = bytes();
    std::uint32_t used = 0;
    auto move = [&](std::uint32_t offset, std::uint32_t size) {
        if (size == 0)
            return used;
        std::memcpy(fresh_bytes + used, old_bytes + offset, size);
        const auto at = used;
        used += size;
        return at;
    };
    auto* fresh_lines = reinterpret_cast<line*>(fresh);
    for (auto i = head_; i != none; i = fresh_lines[i].next) {
        line& l = fresh_lines[i];
        l.name_offset = move(l.name_offset, l.name_size);
        l.value_offset = move(l.value_offset, l.value_size);
    }
    method_.offset = move(method_.offset, method_.size);
    target_or_reason_.offset = move(target_or_reason_.offset, target_or_reason_.size);

    char* old = block_;
    old_size = block_size_;
    block_ = fresh;
    block_size_ = static_cast<std::uint32_t>(want);
    line_capacity_ = static_cast<std::uint32_t>(line_room);
    bytes_used_ = used;
    return old;
}

bool span_fields::same_name(const line& l, field f, std::string_view name) const noexcept
{
    if (f != field::unknown)
        return l.name == f;
    return l.name == field::unknown && l.name_size == name.size() &&
           beast::iequals(std::string_view(bytes() + l.name_offset, l.name_size), name);
}

void span_fields::add_line(field f, std::string_view name, std::string_view value, bool grouped)
{
    value = trim(value);
    if (name.size() > max_size)
        throw std::length_error("field name too large");
    if (value.size() > max_size)
        throw std::length_error("field value too large");
    const std::size_t extra = (holds(name) ? 0 : name.size()) + (holds(value) ? 0 : value.size());
    std::size_t old_size = 0;
    char* old = make_room(1, extra, old_size);
    const span n = place(name);
    const span v = place(value);
    if (old != nullptr)
        retire(old, old_size); // name and value may point into it, and views read before
    const auto i = lines_used_++;
    line& l = lines()[i];
    l.name = f;
    l.name_size = static_cast<std::uint16_t>(n.size);
    l.value_size = static_cast<std::uint16_t>(v.size);
    l.name_offset = n.offset;
    l.value_offset = v.offset;

    const auto bit = name_bit(f, name);
    if (grouped && (names_seen_ & bit) != 0) {
        link_grouped(i, f, name);
        return;
    }
    names_seen_ |= bit;
    link_after(i, tail_);
}

void span_fields::link_after(std::uint32_t i, std::uint32_t after) noexcept
{
    line& l = lines()[i];
    l.prev = after;
    if (after == none) {
        l.next = head_;
        head_ = i;
    } else {
        l.next = lines()[after].next;
        lines()[after].next = i;
    }
    if (l.next == none)
        tail_ = i;
    else
        lines()[l.next].prev = i;
    ++live_;
}

void span_fields::link_grouped(std::uint32_t i, field f, std::string_view name) noexcept
{
    // basic_fields keeps the lines of one name together: a line of a name already present goes
    // after its last line (the lines of a name being adjacent, the first found from the end).
    auto j = tail_;
    while (j != none && !same_name(lines()[j], f, name))
        j = lines()[j].prev;
    link_after(i, j == none ? tail_ : j);
}

void span_fields::append_line(field name, std::string_view name_string, std::string_view value)
{
    if ((names_seen_ & name_bit(name, name_string)) != 0)
        ungrouped_ = true;
    add_line(name, name_string, value, false);
}

void span_fields::insert(field name, std::string_view value)
{
    add_line(name, http::to_string(name), value, true);
}

void span_fields::insert(std::string_view name, std::string_view value)
{
    add_line(http::string_to_field(name), name, value, true);
}

void span_fields::insert(field name, std::string_view name_string, std::string_view value)
{
    add_line(name, name_string, value, true);
}

void span_fields::set(field name, std::string_view value)
{
    erase_all(name, {});
    add_line(name, http::to_string(name), value, false);
}

void span_fields::set(std::string_view name, std::string_view value)
{
    const auto f = http::string_to_field(name);
    erase_all(f, name);
    add_line(f, name, value, false);
}

void span_fields::unlink(std::uint32_t i) noexcept
{
    line& l = lines()[i];
    if (l.prev == none)
        head_ = l.next;
    else
        lines()[l.prev].next = l.next;
    if (l.next == none)
        tail_ = l.prev;
    else
        lines()[l.next].prev = l.prev;
    --live_;
}

span_fields::const_iterator span_fields::erase(const_iterator pos) noexcept
{
    const auto next = lines()[pos.index_].next;
    unlink(pos.index_);
    return {this, next};
}

std::size_t span_fields::erase_all(field f, std::string_view name) noexcept
{
    std::size_t n = 0;
    for (auto i = head_; i != none;) {
        const auto next = lines()[i].next;
        if (same_name(lines()[i], f, name)) {
            unlink(i);
            ++n;
        }
        i = next;
    }
    return n;
}

std::size_t span_fields::erase(field name) noexcept
{
    return erase_all(name, {});
}

std::size_t span_fields::erase(std::string_view name) noexcept
{
    // Compared by name: the same as by field for a known name, and cheaper than looking it up.
    std::size_t n = 0;
    for (auto i = head_; i != none;) {
        const auto next = lines()[i].next;
        const line& l = lines()[i];
        if (l.name_size == name.size() &&
            beast::iequals(std::string_view(bytes() + l.name_offset, l.name_size), name)) {
            unlink(i);
            ++n;
        }
        i = next;
    }
    return n;
}

} // namespace idemgate::gateway
