// SPDX-License-Identifier: Apache-2.0
#include <idemgate/common/digest.hpp>
#include <idemgate/gateway/http_rules.hpp>
#include <idemgate/gateway/request_id.hpp>
#include <idemgate/gateway/span_fields.hpp>
#include <random>

namespace idemgate::gateway {

bool valid_request_id(std::string_view id) noexcept
{
    if (id.empty() || id.size() > 200)
        return false;
    for (unsigned char c : id)
        if (c < 0x21 || c > 0x7e)
            return false;
    return true;
}

void new_request_id(std::string& out)
{
    // Seeded from the OS once per thread; afterwards pure computation.
    thread_local std::mt19937_64 rng{[] {
        std::random_device rd;
        std::seed_seq seq{rd(), rd(), rd(), rd()};
        return std::mt19937_64(seq);
    }()};
    out.clear();
    out.reserve(32);
    const auto first = rng();
    append_hex_words(out, first, rng());
}

std::string new_request_id()
{
    std::string id;
    new_request_id(id);
    return id;
}

namespace {

bool lower_hex(std::string_view s) noexcept
{
    for (char c : s)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
    return true;
}

bool all_zeros(std::string_view s) noexcept
{
    return s.find_first_not_of('0') == std::string_view::npos;
}

} // namespace

std::string_view trace_id_of(std::string_view tp) noexcept
{
    // version "00" has exactly four fields: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 characters.
    if (tp.size() != 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-')
        return {};
    auto version = tp.substr(0, 2);
    auto trace_id = tp.substr(3, 32);
    auto parent_id = tp.substr(36, 16);
    auto flags = tp.substr(53, 2);
    if (version != "00" || !lower_hex(trace_id) || !lower_hex(parent_id) || !lower_hex(flags))
        return {};
    if (all_zeros(trace_id) || all_zeros(parent_id))
        return {};
    return trace_id;
}

template<class Fields>
void read_request_ids(const Fields& fields, std::string_view header_name, request_ids& ids)
{
    ids.request_id.clear();
    ids.generated = false;
    ids.incoming_lines = 0;
    ids.trace_id.clear();
    // Both names in one pass over the lines.
    static constexpr std::string_view traceparent_name = "traceparent";
    header_lookup incoming, traceparent;
    for (const auto& f : fields) {
        const auto name = f.name_string();
        if (same_field_name(name, traceparent_name))
            traceparent.add(f.value());
        if (!header_name.empty() && same_field_name(name, header_name))
            incoming.add(f.value());
    }
    if (!header_name.empty()) {
        ids.incoming_lines = incoming.count;
        if (incoming.count == 1 && valid_request_id(incoming.value)) {
            ids.request_id.assign(incoming.value);
        } else {
            new_request_id(ids.request_id);
            ids.generated = true;
        }
    }
    if (traceparent.count == 1)
        ids.trace_id.assign(trace_id_of(traceparent.value));
}

template<class Fields>
request_ids read_request_ids(const Fields& fields, std::string_view header_name)
{
    request_ids ids;
    read_request_ids(fields, header_name, ids);
    return ids;
}

request_ids read_request_ids(const boost::beast::http::fields& fields, std::string_view header_name)
{
    return read_request_ids<boost::beast::http::fields>(fields, header_name);
}

request_ids read_request_ids(const span_fields& fields, std::string_view header_name)
{
    return read_request_ids<span_fields>(fields, header_name);
}

void read_request_ids(const boost::beast::http::fields& fields, std::string_view header_name,
                      request_ids& ids)
{
    read_request_ids<boost::beast::http::fields>(fields, header_name, ids);
}

void read_request_ids(const span_fields& fields, std::string_view header_name, request_ids& ids)
{
    read_request_ids<span_fields>(fields, header_name, ids);
}

} // namespace idemgate::gateway
