// SPDX-License-Identifier: Apache-2.0
#pragma once
// The last reloads, applied or refused, for the admin API (GET /admin/v1/reloads): written by the
// reloader, read by the admin listener, both on the control thread (the lock is for an embedded
// server whose caller reloads from its own thread).
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace idemgate::gateway::detail {

struct reload_entry {
    std::chrono::system_clock::time_point at;
    bool applied = false;
    std::string trigger;               // "SIGHUP", "admin API", ...
    std::vector<std::string> problems; // as the reload logged and answered them (refused only)
    std::string sha256;                // of the file read ("" when it could not be read)
    std::uint64_t generation = 0;      // the one live after it (the new one, or the kept one)
};

class reload_history {
public:
    static constexpr std::size_t kept = 20;

    void record(reload_entry entry)
    {
        std::lock_guard lock(mutex_);
        entries_.push_front(std::move(entry));
        if (entries_.size() > kept)
            entries_.pop_back();
    }
    // Newest first.
    std::vector<reload_entry> newest_first() const
    {
        std::lock_guard lock(mutex_);
        return {entries_.begin(), entries_.end()};
    }

private:
    mutable std::mutex mutex_;
    std::deque<reload_entry> entries_;
};

} // namespace idemgate::gateway::detail
