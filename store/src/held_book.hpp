// SPDX-License-Identifier: Apache-2.0
#pragma once
// The index of held keys (store::held_index): how an entry names its key, and the in-process
// index the memory and map stores keep. Private to the store library.
//
// An entry's name is label \0 ('h' hashed | 'r' raw) scope-tenant \0 key: ordered by label, so
// one tenant's entries are a range; neither a label (a tenant, or its hex tag) nor a scope's
// tenant part holds a NUL byte, and the key, which may, comes last.
#include <functional>
#include <idemgate/store/held_index.hpp>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idemgate::store::detail {

inline std::string held_entry_name(std::string_view label, scope s)
{
    std::string out;
    out.reserve(label.size() + 3 + s.tenant.size() + s.key.size());
    out.append(label);
    out.push_back('\0');
    out.push_back(s.hashed ? 'h' : 'r');
    out.append(s.tenant);
    out.push_back('\0');
    out.append(s.key);
    return out;
}

// The label and scope an entry's name holds (views into `name`); nullopt for another text.
struct held_entry_parts {
    std::string_view label;
    scope where;
};
inline std::optional<held_entry_parts> held_entry_of(std::string_view name)
{
    auto first = name.find('\0');
    if (first == std::string_view::npos || first + 1 >= name.size())
        return std::nullopt;
    char kind = name[first + 1];
    auto second = name.find('\0', first + 2);
    if ((kind != 'h' && kind != 'r') || second == std::string_view::npos)
        return std::nullopt;
    return held_entry_parts{name.substr(0, first), scope{name.substr(first + 2, second - first - 2),
                                                         name.substr(second + 1), kind == 'h'}};
}

// The bounds of a listing: the names after `after` (or from the first), of `label` only when
// by_label (every name of a label starts with label \0).
inline bool held_name_in_label(std::string_view name, std::string_view label)
{
    return name.size() > label.size() && name.starts_with(label) && name[label.size()] == '\0';
}

// A text kept with the owner token it is about: token \0 text.
inline std::string held_tagged(std::string_view owner_token, std::string_view text)
{
    std::string out(owner_token);
    out.push_back('\0');
    out.append(text);
    return out;
}
// The text of `tagged` when it is about `owner_token`, else "".
inline std::string_view held_text_for(std::string_view tagged, std::string_view owner_token)
{
    if (tagged.size() <= owner_token.size() || !tagged.starts_with(owner_token) ||
        tagged[owner_token.size()] != '\0')
        return {};
    return tagged.substr(owner_token.size() + 1);
}

// How many entries a listing reads at most per key it returns: a page stops short of `limit`
// (with a cursor) rather than read on through a long run of stale entries.
constexpr std::size_t held_scan_factor = 4;

// The memory and map stores' index, one lock: held keys are rare. The record itself stays in the
// store's own map; `look` reads it for a listing.
class held_book {
public:
    void list(std::string_view label, scope s, std::string_view owner_token, std::string_view note)
    {
        std::lock_guard lock(mutex_);
        auto& e = entries_[held_entry_name(label, s)];
        e.note = held_tagged(owner_token, note);
    }

    void note(std::string_view label, scope s, std::string_view owner_token, std::string_view seen)
    {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(held_entry_name(label, s));
        if (it != entries_.end())
            it->second.seen = held_tagged(owner_token, seen);
    }

    void unlist(std::string_view label, scope s)
    {
        std::lock_guard lock(mutex_);
        entries_.erase(held_entry_name(label, s));
    }

    // A page: `look` reads a key's record (lookup); `id` names it. Entries whose key no longer
    // holds an outcome_unknown record are dropped.
    held_page page(std::string_view label, bool by_label, std::string_view after, std::size_t limit,
                   const std::function<lookup_result(scope)>& look,
                   const std::function<std::string(scope)>& id)
    {
        held_page out;
        std::vector<std::pair<std::string, entry>> batch;
        {
            std::lock_guard lock(mutex_);
            auto it = after.empty()
                          ? (by_label ? entries_.lower_bound(std::string(label) + '\0') : entries_.begin())
                          : entries_.upper_bound(std::string(after));
            for (; it != entries_.end() && batch.size() < limit * held_scan_factor; ++it) {
                if (by_label && !held_name_in_label(it->first, label))
                    break;
                batch.emplace_back(*it);
            }
            bool more = it != entries_.end() && (!by_label || held_name_in_label(it->first, label));
            if (more && !batch.empty())
                out.next = batch.back().first;
        }
        std::size_t used = 0;
        for (auto& [name, e] : batch) {
            ++used;
            auto parts = held_entry_of(name);
            auto found = parts ? look(parts->where) : lookup_result{};
            if (!found.existing || found.existing->state != record_state::outcome_unknown) {
                std::lock_guard lock(mutex_);
                entries_.erase(name);
                continue;
            }
            const auto& token = found.existing->owner_token;
            held_key k{std::string(parts->label),
                       std::string(parts->where.tenant),
                       std::string(parts->where.key),
                       parts->where.hashed,
                       id(parts->where),
                       std::string(held_text_for(e.note, token)),
                       std::string(held_text_for(e.seen, token)),
                       std::move(*found.existing),
                       found.expires_in_ms};
            out.keys.push_back(std::move(k));
            if (out.keys.size() == limit)
                break;
        }
        if (used < batch.size())
            out.next = batch[used - 1].first;
        return out;
    }

private:
    struct entry {
        std::string note; // token \0 note
        std::string seen; // token \0 seen
    };
    std::mutex mutex_;
    std::map<std::string, entry, std::less<>> entries_;
};

} // namespace idemgate::store::detail
