// SPDX-License-Identifier: Apache-2.0
#include "idempotency/json_tree.hpp"

#include <idemgate/gateway/json_key.hpp>
#include <memory_resource>

namespace idemgate::gateway {

namespace {

// The value's text as a key part, or false for anything but a non-empty string or a number. A
// number is its source text: an integer's digits however many, a fraction or exponent as
// written. -0 is "0", the spelling keys had when integers were read as int64.
bool append_value(const json_tree& tree, const json_node& n, std::string& out)
{
    switch (n.type) {
    case json_node::kind::string: out += tree.text_of(n); return n.text_size != 0;
    case json_node::kind::number:
        out += tree.text_of(n) == "-0" ? std::string_view("0") : tree.text_of(n);
        return true;
    default: return false;
    }
}

void append_escaped(std::string& out, std::string_view part)
{
    for (char c : part) {
        if (c == '%')
            out += "%25";
        else if (c == ',')
            out += "%2C";
        else
            out.push_back(c);
    }
}

} // namespace

json_key key_from_json(std::string_view body, const std::vector<std::string>& pointers, std::string& key)
{
    json_key out;
    key.clear();
    // The document lives only for this call: one arena, on the stack for small bodies, holds its
    // nodes and characters.
    unsigned char arena[4096];
    std::pmr::monotonic_buffer_resource resource(arena, sizeof arena);
    json_tree tree(&resource);
    if (!read_json(body, tree))
        return out;
    std::string part;
    for (std::size_t i = 0; i < pointers.size(); ++i) {
        const auto& pointer = pointers[i];
        const json_node* at = find_pointer(tree, pointer);
        part.clear();
        if (!at || !append_value(tree, *at, part)) {
            out.result = json_key::status::missing;
            out.missing = i;
            key.clear();
            return out;
        }
        if (pointers.size() == 1) {
            key = std::move(part);
            break;
        }
        if (i > 0)
            key.push_back(',');
        append_escaped(key, part);
    }
    out.result = json_key::status::found;
    return out;
}

} // namespace idemgate::gateway
