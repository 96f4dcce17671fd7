// SPDX-License-Identifier: Apache-2.0
#pragma once
// A JSON document read into a flat tree that keeps each number's source text. Boost.JSON's DOM
// holds a number only as an int64, uint64 or double: digits beyond 64 bits and the spelling of a
// fraction are lost, so two different numbers can read as one. The canonical fingerprint and keys
// taken from a body need what the client sent, so they read the body into this tree instead.
#include <cstdint>
#include <memory_resource>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::gateway {

struct json_node {
    enum class kind : std::uint8_t { object, array, string, number, true_, false_, null };
    kind type = kind::null;
    // Dropped by the canonical form's ignored fields.
    bool removed = false;
    // A member of an object: its key, unescaped, in json_tree::text.
    std::uint32_t key_at = 0;
    std::uint32_t key_size = 0;
    // A string's characters, unescaped; a number's source text.
    std::uint32_t text_at = 0;
    std::uint32_t text_size = 0;
    // One past the last node of this value: a container's children are the nodes in between,
    // each child's next sibling starts at the child's `end`.
    std::uint32_t end = 0;
};

// The nodes in document order (the root first) and the characters they refer to, allocated from
// the resource given: a caller on the request path passes an arena.
class json_tree {
public:
    explicit json_tree(std::pmr::memory_resource* resource = std::pmr::get_default_resource())
        : nodes(resource), text(resource)
    {
    }

    std::string_view key(const json_node& n) const { return {text.data() + n.key_at, n.key_size}; }
    std::string_view text_of(const json_node& n) const { return {text.data() + n.text_at, n.text_size}; }

    std::pmr::vector<json_node> nodes;
    std::pmr::string text;
};

// Reads `body` as one JSON value into `tree` (emptied first), with the grammar and limits of
// boost::json::parse under default options (depth 32, no comments, no trailing commas, valid
// UTF-8), so a body is JSON here exactly when it is for Boost.JSON. Members keep their order and
// their duplicates; a reader takes the last of a duplicate key, as Boost.JSON's DOM keeps it.
// False when the body is not JSON, or is 4 GiB or more (offsets are 32-bit).
bool read_json(std::string_view body, json_tree& tree);

// The value at `pointer` (RFC 6901: "" is the root, "~0" and "~1" escape '~' and '/', an array
// index is "0" or digits without a leading zero), or nullptr when there is none. Removed nodes
// are not skipped.
const json_node* find_pointer(const json_tree& tree, std::string_view pointer);

} // namespace idemgate::gateway
