// SPDX-License-Identifier: Apache-2.0
#include "tier/local_tier.hpp"

#include "transport/wire.hpp"

namespace idemgate::gateway::detail {

namespace {

// The response's fields into the record: names and values back to back in one string. False when
// they do not fit the record's 32-bit offsets.
bool copy_fields(const response_type& response, tier_record& r)
{
    std::size_t count = 0;
    std::size_t size = 0;
    for (const auto& f : response) {
        ++count;
        size += f.name_string().size() + f.value().size();
    }
    if (size > UINT32_MAX)
        return false;
    r.fields.reserve(count);
    r.field_text.reserve(size);
    for (const auto& f : response) {
        auto name = f.name_string();
        auto value = f.value();
        r.fields.push_back({static_cast<std::uint32_t>(r.field_text.size()),
                            static_cast<std::uint32_t>(name.size()),
                            static_cast<std::uint32_t>(value.size())});
        r.field_text.append(name).append(value);
    }
    return true;
}

} // namespace

std::size_t tier_entry::bytes() const noexcept
{
    // The strings and the field table, plus the entry, its list node, its index slot and the
    // shared_ptr block.
    return id.size() + fingerprint.size() + record.reason.size() + record.field_text.size() +
           record.fields.size() * sizeof(tier_record::field) + record.body.size() + http1.status_line.size() +
           http1.fields.size() + 256;
}

local_tier::local_tier(std::size_t max_bytes, std::chrono::milliseconds max_age, metrics& stats)
    : max_bytes_(max_bytes), max_age_(max_age), stats_(stats)
{
}

std::shared_ptr<const tier_entry> local_tier::find(std::string_view id, clock::time_point now)
{
    auto it = index_.find(id);
    if (it == index_.end()) {
        stats_.tier_misses.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    auto node = it->second;
    if ((*node)->expires <= now) {
        drop(node);
        stats_.tier_misses.fetch_add(1, std::memory_order_relaxed);
        return nullptr;
    }
    lru_.splice(lru_.begin(), lru_, node); // most recently used first; iterators stay valid
    stats_.tier_hits.fetch_add(1, std::memory_order_relaxed);
    return *node;
}

void local_tier::insert(tier_slot slot, const response_type& response, clock::time_point now)
{
    insert_with_body(std::move(slot), response, response.body(), now);
}

void local_tier::insert(tier_slot slot, response_type&& response, clock::time_point now)
{
    std::string body = std::move(response.body());
    insert_with_body(std::move(slot), response, std::move(body), now);
}

void local_tier::insert_with_body(tier_slot slot, const response_type& response, std::string body,
                                  clock::time_point now)
{
    const auto expires = std::min(slot.expires, now + max_age_);
    if (expires <= now)
        return;
    auto entry = std::make_shared<tier_entry>();
    entry->id = std::move(slot.id);
    entry->fingerprint = std::move(slot.fingerprint);
    entry->expires = expires;
    auto& record = entry->record;
    record.status = response.result_int();
    record.reason = response.reason();
    if (!copy_fields(response, record))
        return;
    record.body = std::move(body);
    // The HTTP/1.1 rendering: the bytes write_message renders, split where the version and
    // Connection go.
    std::string head;
    render_head(response.base(), head);
    auto first_line = head.find("\r\n");
    auto space = head.find(' ');
    entry->http1.status_line = head.substr(space, first_line + 2 - space);
    entry->http1.fields = head.substr(first_line + 2, head.size() - first_line - 4); // without the final CRLF
    auto size = entry->bytes();
    if (size > max_bytes_)
        return;
    erase(entry->id);
    while (bytes_ + size > max_bytes_ && !lru_.empty()) {
        drop(std::prev(lru_.end()));
        stats_.tier_evictions.fetch_add(1, std::memory_order_relaxed);
    }
    lru_.push_front(std::move(entry));
    index_.emplace(lru_.front()->id, lru_.begin());
    bytes_ += size;
    stats_.tier_bytes.fetch_add(static_cast<std::int64_t>(size), std::memory_order_relaxed);
}

void local_tier::erase(std::string_view id)
{
    auto it = index_.find(id);
    if (it != index_.end())
        drop(it->second);
}

void local_tier::clear()
{
    while (!lru_.empty())
        drop(lru_.begin());
}

void local_tier::drop(list_type::iterator it)
{
    auto size = (*it)->bytes();
    index_.erase(std::string_view((*it)->id));
    lru_.erase(it);
    bytes_ -= size;
    stats_.tier_bytes.fetch_sub(static_cast<std::int64_t>(size), std::memory_order_relaxed);
}

void local_tier_deleter::operator()(local_tier* tier) const noexcept
{
    delete tier;
}

} // namespace idemgate::gateway::detail
