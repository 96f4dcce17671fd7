// SPDX-License-Identifier: Apache-2.0
#include "idempotency/json_tree.hpp"

#include <algorithm>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/error.hpp>
#include <boost/json/parse_options.hpp>
#include <boost/json/value.hpp>
#include <limits>

namespace idemgate::gateway {

namespace json = boost::json;

namespace {

using kind = json_node::kind;

// Boost.JSON's handler interface, building the tree. A string or key may arrive in parts (around
// escapes), a number too (in principle: the whole body is given at once): every part goes to the
// end of `text`, and the last call knows where the piece began.
class tree_builder {
public:
    // The limits of the DOM parser that json::parse uses, so that the same bodies fail.
    static constexpr std::size_t max_object_size = json::object::max_size();
    static constexpr std::size_t max_array_size = json::array::max_size();
    static constexpr std::size_t max_key_size = json::string::max_size();
    static constexpr std::size_t max_string_size = json::string::max_size();

    explicit tree_builder(json_tree& tree) : tree_(tree), open_(tree.nodes.get_allocator()) {}

    bool on_document_begin(json::error_code&) { return true; }
    bool on_document_end(json::error_code&) { return true; }
    bool on_object_begin(json::error_code&) { return open(kind::object); }
    bool on_object_end(std::size_t, json::error_code&) { return close(); }
    bool on_array_begin(json::error_code&) { return open(kind::array); }
    bool on_array_end(std::size_t, json::error_code&) { return close(); }
    bool on_key_part(json::string_view s, std::size_t, json::error_code&) { return append(s); }
    bool on_key(json::string_view s, std::size_t n, json::error_code&)
    {
        append(s);
        key_at_ = static_cast<std::uint32_t>(tree_.text.size() - n);
        key_size_ = static_cast<std::uint32_t>(n);
        return true;
    }
    bool on_string_part(json::string_view s, std::size_t, json::error_code&) { return append(s); }
    bool on_string(json::string_view s, std::size_t n, json::error_code&)
    {
        append(s);
        return push(kind::string, tree_.text.size() - n, n);
    }
    bool on_number_part(json::string_view s, json::error_code&)
    {
        number_size_ += s.size();
        return append(s);
    }
    bool on_int64(std::int64_t, json::string_view s, json::error_code&) { return number(s); }
    bool on_uint64(std::uint64_t, json::string_view s, json::error_code&) { return number(s); }
    bool on_double(double, json::string_view s, json::error_code&) { return number(s); }
    bool on_bool(bool b, json::error_code&) { return push(b ? kind::true_ : kind::false_, 0, 0); }
    bool on_null(json::error_code&) { return push(kind::null, 0, 0); }
    bool on_comment_part(json::string_view, json::error_code&) { return true; }
    bool on_comment(json::string_view, json::error_code&) { return true; }

private:
    bool append(json::string_view s)
    {
        tree_.text.append(s.data(), s.size());
        return true;
    }
    // The number's text is its parts and the last piece `s`.
    bool number(json::string_view s)
    {
        append(s);
        std::size_t size = number_size_ + s.size();
        number_size_ = 0;
        return push(kind::number, tree_.text.size() - size, size);
    }
    // A value; inside an object it takes the key read just before it.
    bool push(kind type, std::size_t at, std::size_t size)
    {
        json_node n;
        n.type = type;
        n.key_at = key_at_;
        n.key_size = key_size_;
        n.text_at = static_cast<std::uint32_t>(at);
        n.text_size = static_cast<std::uint32_t>(size);
        n.end = static_cast<std::uint32_t>(tree_.nodes.size() + 1);
        tree_.nodes.push_back(n);
        key_at_ = 0;
        key_size_ = 0;
        return true;
    }
    bool open(kind type)
    {
        open_.push_back(static_cast<std::uint32_t>(tree_.nodes.size()));
        return push(type, 0, 0);
    }
    bool close()
    {
        tree_.nodes[open_.back()].end = static_cast<std::uint32_t>(tree_.nodes.size());
        open_.pop_back();
        return true;
    }

    json_tree& tree_;
    std::pmr::vector<std::uint32_t> open_; // the containers not yet closed, innermost last
    std::uint32_t key_at_ = 0;
    std::uint32_t key_size_ = 0;
    std::size_t number_size_ = 0;
};

// Whether the pointer token `token` (escaped) names `key`. A '~' not followed by '0' or '1' names
// nothing.
bool token_names(std::string_view token, std::string_view key)
{
    std::size_t k = 0;
    for (std::size_t i = 0; i < token.size(); ++i, ++k) {
        char c = token[i];
        if (c == '~') {
            if (i + 1 == token.size() || (token[i + 1] != '0' && token[i + 1] != '1'))
                return false;
            c = token[++i] == '0' ? '~' : '/';
        }
        if (k == key.size() || key[k] != c)
            return false;
    }
    return k == key.size();
}

// An array index token: "0", or digits without a leading zero; -1 for anything else ("-" names
// the element after the last, which never exists).
std::int64_t array_index(std::string_view token)
{
    if (token.empty() || token.size() > 18 || (token.size() > 1 && token[0] == '0'))
        return -1;
    std::int64_t n = 0;
    for (char c : token) {
        if (c < '0' || c > '9')
            return -1;
        n = n * 10 + (c - '0');
    }
    return n;
}

// The child of the container at `at` that `token` names, or -1.
std::int64_t child(const json_tree& tree, std::uint32_t at, std::string_view token)
{
    const auto& container = tree.nodes[at];
    if (container.type == kind::object) {
        std::int64_t found = -1; // the last of a duplicate key
        for (std::uint32_t c = at + 1; c < container.end; c = tree.nodes[c].end)
            if (token_names(token, tree.key(tree.nodes[c])))
                found = c;
        return found;
    }
    if (container.type == kind::array) {
        auto index = array_index(token);
        for (std::uint32_t c = at + 1; index >= 0 && c < container.end; c = tree.nodes[c].end, --index)
            if (index == 0)
                return c;
    }
    return -1;
}

} // namespace

bool read_json(std::string_view body, json_tree& tree)
{
    tree.nodes.clear();
    tree.text.clear();
    if (body.size() >= std::numeric_limits<std::uint32_t>::max())
        return false;
    // A string's characters unescaped are never more than their JSON text. Nodes: about one per
    // 8 bytes of a typical body; reserved, the vector does not leave its smaller copies behind in
    // the caller's arena as it grows.
    tree.text.reserve(body.size());
    tree.nodes.reserve(body.size() / 8 + 4);
    json::basic_parser<tree_builder> parser(json::parse_options{}, tree);
    json::error_code ec;
    auto used = parser.write_some(false, body.data(), body.size(), ec);
    return !ec && used == body.size();
}

const json_node* find_pointer(const json_tree& tree, std::string_view pointer)
{
    if (tree.nodes.empty())
        return nullptr;
    std::uint32_t at = 0;
    std::size_t pos = 0;
    while (pos < pointer.size()) {
        if (pointer[pos] != '/')
            return nullptr;
        auto next = std::min(pointer.find('/', pos + 1), pointer.size());
        auto found = child(tree, at, pointer.substr(pos + 1, next - pos - 1));
        if (found < 0)
            return nullptr;
        at = static_cast<std::uint32_t>(found);
        pos = next;
    }
    return &tree.nodes[at];
}

} // namespace idemgate::gateway
