// SPDX-License-Identifier: Apache-2.0
#pragma once
// The memory store's schedule of held keys' probes (session::schedule_probe and claim_probes):
// entries ordered by due time, one lock. Held keys are rare, so one lock for all is enough.
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace idemgate::store::detail {

class probe_book {
public:
    void schedule(std::string_view entry, std::int64_t due)
    {
        std::lock_guard lock(mutex_);
        schedule_locked(std::string(entry), due);
    }

    std::vector<std::string> claim(std::int64_t now, std::int64_t lease, std::size_t limit)
    {
        std::lock_guard lock(mutex_);
        std::vector<std::string> out;
        for (auto it = by_due_.begin(); it != by_due_.end() && it->first <= now && out.size() < limit; ++it)
            out.push_back(it->second);
        for (const auto& entry : out)
            schedule_locked(entry, now + lease);
        return out;
    }

    void unschedule(std::string_view entry)
    {
        std::lock_guard lock(mutex_);
        auto it = due_of_.find(std::string(entry));
        if (it == due_of_.end())
            return;
        by_due_.erase({it->second, it->first});
        due_of_.erase(it);
    }

private:
    void schedule_locked(std::string entry, std::int64_t due)
    {
        auto [it, added] = due_of_.try_emplace(std::move(entry), due);
        if (!added)
            by_due_.erase({it->second, it->first});
        it->second = due;
        by_due_.insert({due, it->first});
    }

    std::mutex mutex_;
    std::map<std::string, std::int64_t, std::less<>> due_of_;
    std::set<std::pair<std::int64_t, std::string>> by_due_;
};

} // namespace idemgate::store::detail
