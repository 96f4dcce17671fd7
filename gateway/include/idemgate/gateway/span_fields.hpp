// SPDX-License-Identifier: Apache-2.0
#pragma once
// The header fields of every request and answer on the gateway's request path: Beast's Fields
// concept over one owned block of bytes, without an element per field line or an ordered index.
// Each line is kept as (field, name span, value span), the spans being offsets into the block (so
// a copy or a move stays valid), the lines in a list in arrival order. A head read by the plain
// readers (plain_head.hpp) is copied into the block once and its lines point into that copy.
//
// Semantics are basic_fields' (names compared case-insensitively, lookups find the first line of
// a name, every line of a name kept): including its order, in which a line inserted under a name
// already present goes after that name's last line (so the lines of one name stay together), and
// set() removes the name's lines and appends one at the end. Lookups are linear scans (a head has
// a handful of fields; basic_fields' index compares whole names at every step). Iterators stay
// valid when other lines are erased or added. Views (names, values) stay valid until the fields
// are cleared or destroyed, as basic_fields' do until their line is erased: a block the lines
// outgrow is kept until then.
//
// As in basic_fields, a name or value over 65533 bytes throws std::length_error.
#include <boost/beast/http/field.hpp>
#include <boost/optional/optional.hpp>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string_view>
#include <utility>

namespace idemgate::gateway {

class span_fields {
    struct line;
    static constexpr std::uint32_t none = 0xffffffffu;

public:
    using field = boost::beast::http::field;

    // One field line.
    class value_type {
    public:
        field name() const noexcept { return field_; }
        std::string_view name_string() const noexcept { return name_; }
        std::string_view value() const noexcept { return value_; }

    private:
        friend class span_fields;
        value_type(field f, std::string_view name, std::string_view value) noexcept
            : field_(f), name_(name), value_(value)
        {
        }
        field field_;
        std::string_view name_;
        std::string_view value_;
    };

    // Walks the lines in order; dereferencing yields a value_type by value.
    class const_iterator {
    public:
        using iterator_category = std::bidirectional_iterator_tag;
        using value_type = span_fields::value_type;
        using difference_type = std::ptrdiff_t;
        using reference = span_fields::value_type;
        struct pointer {
            span_fields::value_type line;
            const span_fields::value_type* operator->() const noexcept { return &line; }
        };

        const_iterator() noexcept = default;
        reference operator*() const noexcept { return fields_->line_at(index_); }
        pointer operator->() const noexcept { return {fields_->line_at(index_)}; }
        const_iterator& operator++() noexcept
        {
            index_ = fields_->next_of(index_);
            return *this;
        }
        const_iterator operator++(int) noexcept
        {
            auto before = *this;
            ++*this;
            return before;
        }
        const_iterator& operator--() noexcept
        {
            index_ = index_ == none ? fields_->tail_ : fields_->prev_of(index_);
            return *this;
        }
        const_iterator operator--(int) noexcept
        {
            auto before = *this;
            --*this;
            return before;
        }
        friend bool operator==(const const_iterator& a, const const_iterator& b) noexcept
        {
            return a.index_ == b.index_;
        }

    private:
        friend class span_fields;
        const_iterator(const span_fields* f, std::uint32_t index) noexcept : fields_(f), index_(index) {}
        const span_fields* fields_ = nullptr;
        std::uint32_t index_ = none;
    };
    using iterator = const_iterator;
    using size_type = std::size_t;

    span_fields() noexcept = default;
    ~span_fields();
    span_fields(const span_fields& other);
    span_fields(span_fields&& other) noexcept;
    span_fields& operator=(const span_fields& other);
    span_fields& operator=(span_fields&& other) noexcept;

    // The value of the first line of a name; at() throws std::out_of_range when there is none,
    // operator[] returns an empty view.
    std::string_view at(field name) const;
    std::string_view at(std::string_view name) const;
    std::string_view operator[](field name) const noexcept;
    std::string_view operator[](std::string_view name) const noexcept;

    // Removes every line (and the start line's method, target or reason).
    void clear() noexcept;

    // Adds a line; a name already present gets it after its last line. The value is trimmed of
    // leading and trailing spaces and tabs.
    void insert(field name, std::string_view value);
    void insert(std::string_view name, std::string_view value);
    void insert(field name, std::string_view name_string, std::string_view value);
    void insert(field, std::nullptr_t) = delete;
    void insert(std::string_view, std::nullptr_t) = delete;

    // Removes the name's lines and appends one line at the end.
    void set(field name, std::string_view value);
    void set(std::string_view name, std::string_view value);
    void set(field, std::nullptr_t) = delete;
    void set(std::string_view, std::nullptr_t) = delete;

    // Removes one line (returning the one after it), or every line of a name (returning how many).
    const_iterator erase(const_iterator pos) noexcept;
    std::size_t erase(field name) noexcept;
    std::size_t erase(std::string_view name) noexcept;

    void swap(span_fields& other) noexcept;
    friend void swap(span_fields& a, span_fields& b) noexcept { a.swap(b); }

    std::size_t count(field name) const noexcept;
    std::size_t count(std::string_view name) const noexcept;
    const_iterator find(field name) const noexcept;
    const_iterator find(std::string_view name) const noexcept;
    // The lines of a name, which are adjacent.
    std::pair<const_iterator, const_iterator> equal_range(field name) const noexcept;
    std::pair<const_iterator, const_iterator> equal_range(std::string_view name) const noexcept;

    const_iterator begin() const noexcept { return {this, head_}; }
    const_iterator end() const noexcept { return {this, none}; }
    const_iterator cbegin() const noexcept { return begin(); }
    const_iterator cend() const noexcept { return end(); }

    // The number of lines.
    std::size_t size() const noexcept { return live_; }

    // For a parser adding a head's lines one by one: a line at the end, put with the other lines
    // of its name only by group_lines(), which the parser calls once the lines are in. So a head
    // of many lines costs a sort, not a search per line (insert() searches for its name's last
    // line when a line of the same name bit came before).
    void append_line(field name, std::string_view name_string, std::string_view value);
    void group_lines();

    // For a reader of a whole head: drops everything, copies `head` into the block with room for
    // `lines` lines and returns the copy. The names, values, method, target and reason then
    // given to insert() and the header's setters as views into that copy are kept as offsets,
    // not copied again.
    std::string_view adopt(std::string_view head, std::size_t lines);
    // After adopt(), for at most `lines` lines: a line whose name and value are views into the
    // copy adopt() returned, the value trimmed, each at most 65533 bytes (what insert() would do
    // with it, without the checks).
    void append_adopted(field f, std::string_view name, std::string_view value) noexcept
    {
        const auto i = lines_used_++;
        line& l = lines()[i];
        l.name = f;
        l.name_size = static_cast<std::uint16_t>(name.size());
        l.value_size = static_cast<std::uint16_t>(value.size());
        l.name_offset = static_cast<std::uint32_t>(name.data() - bytes());
        l.value_offset = static_cast<std::uint32_t>(value.data() - bytes());
        const auto bit = name_bit(f, name);
        if ((names_seen_ & bit) != 0) {
            link_grouped(i, f, name);
            return;
        }
        names_seen_ |= bit;
        l.prev = tail_;
        l.next = none;
        if (tail_ == none)
            head_ = i;
        else
            lines()[tail_].next = i;
        tail_ = i;
        ++live_;
    }

protected:
    // What Beast's header<> and message<> call (the Fields concept).
    std::string_view get_method_impl() const noexcept { return view(method_); }
    std::string_view get_target_impl() const noexcept { return view(target_or_reason_); }
    std::string_view get_reason_impl() const noexcept { return view(target_or_reason_); }
    bool get_chunked_impl() const;
    bool get_keep_alive_impl(unsigned version) const;
    bool has_content_length_impl() const noexcept;
    void set_method_impl(std::string_view s);
    void set_target_impl(std::string_view s);
    void set_reason_impl(std::string_view s);
    void set_chunked_impl(bool value);
    void set_content_length_impl(const boost::optional<std::uint64_t>& value);
    void set_keep_alive_impl(unsigned version, bool keep_alive);

private:
    struct span {
        std::uint32_t offset = 0;
        std::uint32_t size = 0;
    };
    struct line {
        field name;
        std::uint16_t name_size;
        std::uint16_t value_size;
        std::uint32_t name_offset;
        std::uint32_t value_offset;
        std::uint32_t prev;
        std::uint32_t next;
    };

    const line* lines() const noexcept { return reinterpret_cast<const line*>(block_); }
    line* lines() noexcept { return reinterpret_cast<line*>(block_); }
    const char* bytes() const noexcept { return block_ + bytes_begin(); }
    std::size_t bytes_begin() const noexcept { return std::size_t{line_capacity_} * sizeof(line); }
    std::string_view view(span s) const noexcept
    {
        return s.size == 0 ? std::string_view{} : std::string_view{bytes() + s.offset, s.size};
    }
    value_type line_at(std::uint32_t i) const noexcept
    {
        const line& l = lines()[i];
        return {l.name, {bytes() + l.name_offset, l.name_size}, {bytes() + l.value_offset, l.value_size}};
    }
    std::uint32_t next_of(std::uint32_t i) const noexcept { return lines()[i].next; }
    std::uint32_t prev_of(std::uint32_t i) const noexcept { return lines()[i].prev; }

    // A bit per name (its field, or its length and first letter): two lines whose bits differ
    // have different names.
    static std::uint64_t name_bit(field f, std::string_view name) noexcept
    {
        if (f != field::unknown)
            return std::uint64_t{1} << (static_cast<unsigned>(f) & 63u);
        const unsigned first = name.empty() ? 0u : static_cast<unsigned char>(name.front()) | 0x20u;
        return std::uint64_t{1} << ((name.size() * 7u + first) & 63u);
    }
    // Links line `i` after line `after` (none: first).
    void link_after(std::uint32_t i, std::uint32_t after) noexcept;
    // Links line `i` after the last line of its name, or at the end.
    void link_grouped(std::uint32_t i, field f, std::string_view name) noexcept;
    bool same_name(const line& l, field f, std::string_view name) const noexcept;
    std::uint32_t find_index(field f, std::string_view name) const noexcept;
    std::size_t erase_all(field f, std::string_view name) noexcept;
    void unlink(std::uint32_t i) noexcept;
    // Adds a line: at the end, or (grouped) after the last line of its name.
    void add_line(field f, std::string_view name, std::string_view value, bool grouped);
    // Whether `s` lies in the block's bytes, and then where.
    bool holds(std::string_view s) const noexcept;
    span place(std::string_view s) noexcept; // s is held, or room was made
    // Room for `lines_wanted` more lines and `extra` more bytes; returns the old block to free
    // after the caller has read what it was given (it may point into the old block), or nullptr.
    char* make_room(std::size_t lines_wanted, std::size_t extra, std::size_t& old_size);
    struct retired;
    void retire(char* old, std::size_t size) noexcept;
    void release() noexcept;
    // The sizes, the list's ends and the start line of `other`, whose block this one now holds or copies.
    void take_layout(const span_fields& other) noexcept;
    // No lines and no start line; the block, if any, is kept for the next head.
    void forget_lines() noexcept;
    void set_start(span& which, std::string_view s);

    char* block_ = nullptr;
    char* retired_ = nullptr;         // blocks outgrown, freed with the fields
    std::uint32_t block_size_ = 0;    // bytes allocated
    std::uint32_t line_capacity_ = 0; // lines the block's front holds
    std::uint32_t lines_used_ = 0;    // slots taken (erased lines keep theirs)
    std::uint32_t bytes_used_ = 0;
    std::uint32_t head_ = none;
    std::uint32_t tail_ = none;
    std::uint32_t live_ = 0;
    std::uint64_t names_seen_ = 0; // a bit per name hash: a name not seen needs no group search
    bool ungrouped_ = false;       // append_line() may have left a name's lines apart
    span method_;
    span target_or_reason_;
};

} // namespace idemgate::gateway
