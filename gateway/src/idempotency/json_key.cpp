// SPDX-License-Identifier: Apache-2.0
#include <boost/json/monotonic_resource.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <idemgate/gateway/json_key.hpp>

namespace idemgate::gateway {

namespace json = boost::json;

namespace {

// The value's text as a key part, or false for anything but a non-empty string or a number.
bool append_value(const json::value& v, std::string& out)
{
    switch (v.kind()) {
    case json::kind::string:
        out.append(v.get_string().data(), v.get_string().size());
        return !v.get_string().empty();
    case json::kind::int64: out += std::to_string(v.get_int64()); return true;
    case json::kind::uint64: out += std::to_string(v.get_uint64()); return true;
    case json::kind::double_: out += json::serialize(v); return true;
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
    // The document lives only for this call: one arena, on the stack for small bodies, instead
    // of an allocation per string, object and array.
    unsigned char arena[4096];
    json::monotonic_resource resource(arena, sizeof arena);
    boost::system::error_code ec;
    json::value root = json::parse(json::string_view(body.data(), body.size()), ec, &resource);
    if (ec)
        return out;
    std::string part;
    for (std::size_t i = 0; i < pointers.size(); ++i) {
        const auto& pointer = pointers[i];
        boost::system::error_code pointer_ec;
        const json::value* at =
            root.find_pointer(json::string_view(pointer.data(), pointer.size()), pointer_ec);
        part.clear();
        if (!at || !append_value(*at, part)) {
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
