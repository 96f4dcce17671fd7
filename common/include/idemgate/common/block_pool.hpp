// SPDX-License-Identifier: Apache-2.0
#pragma once
// Blocks a thread frees and hands out again: block_pool<Granule, Classes, MaxKept> keeps, per
// thread, up to MaxKept freed blocks of each of its Classes sizes (Granule, 2 x Granule, ...
// bytes) and serves a request of up to that size from them before asking the allocator. The
// per-request objects of <idemgate/common/recycled.hpp> (a pool of one class per object size)
// and the gateway's header blocks (span_fields.cpp: sixteen classes, 256 bytes to 4 KiB) each
// have their own pools.
// A block freed on another thread joins that thread's blocks. Under AddressSanitizer every block
// goes to the allocator, so a use after free is still reported.
#include <cstddef>
#include <cstdint>
#include <new>

namespace idemgate {

namespace block_pooling {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool enabled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool enabled = false;
#else
inline constexpr bool enabled = true;
#endif
#else
inline constexpr bool enabled = true;
#endif

struct free_block {
    free_block* next;
};

// A block back to the allocator, sized when the compiler offers sized deallocation (clang
// leaves it off by default).
inline void release(void* p, [[maybe_unused]] std::size_t bytes) noexcept
{
#if defined(__cpp_sized_deallocation)
    ::operator delete(p, bytes);
#else
    ::operator delete(p);
#endif
}

} // namespace block_pooling

template<std::size_t Granule, std::size_t Classes, std::uint32_t MaxKept>
class block_pool {
public:
    static_assert(Granule >= sizeof(block_pooling::free_block) && Classes > 0);
    static constexpr std::size_t granule = Granule;
    static constexpr std::size_t classes = Classes;
    static constexpr std::uint32_t max_kept = MaxKept;

    // The class of a request for `bytes` (0-based); at `Classes` or above, the allocator's.
    static constexpr std::size_t class_of(std::size_t bytes) noexcept
    {
        return bytes == 0 ? 0 : (bytes - 1) / Granule;
    }
    // The size of the blocks of class `k`.
    static constexpr std::size_t block_bytes(std::size_t k) noexcept { return (k + 1) * Granule; }

    // One thread's kept blocks, a list per class. Trivially destructible, so it stays usable while
    // the thread's other objects are destroyed; the thread-exit release empties it and closes it.
    // The heads, then the counts, as the header fields' pool had them: with each class's head and
    // count side by side, GCC inlined the fields' deallocation differently and a proxied request
    // cost more instructions (docs/performance.md).
    struct cache {
        block_pooling::free_block* head[Classes];
        std::uint32_t kept[Classes];
        bool registered; // the thread-exit release is set up
        bool closed;     // released: blocks go straight back to the allocator
    };
    static inline thread_local cache this_thread{};

    // At least `bytes` bytes: a kept block of their class, else a new block of the class's size
    // (a request above the largest class: exactly `bytes`, from the allocator).
    static void* allocate(std::size_t bytes)
    {
        auto k = class_of(bytes);
        if (!block_pooling::enabled || k >= Classes)
            return ::operator new(bytes);
        auto& c = this_thread;
        if (auto* b = c.head[k]) {
            c.head[k] = b->next;
            --c.kept[k];
            return b;
        }
        return ::operator new(block_bytes(k));
    }

    // What allocate(bytes) gave, on any thread: kept by this thread unless its class has
    // `MaxKept` blocks already.
    static void deallocate(void* p, std::size_t bytes) noexcept
    {
        auto k = class_of(bytes);
        if (!block_pooling::enabled || k >= Classes) {
            block_pooling::release(p, bytes);
            return;
        }
        auto& c = this_thread;
        if (c.closed || c.kept[k] >= MaxKept) {
            block_pooling::release(p, block_bytes(k));
            return;
        }
        if (!c.registered)
            register_release();
        auto* b = static_cast<block_pooling::free_block*>(p);
        b->next = c.head[k];
        c.head[k] = b;
        ++c.kept[k];
    }

private:
    struct release_at_exit {
        ~release_at_exit()
        {
            auto& c = this_thread;
            for (std::size_t k = 0; k < Classes; ++k) {
                while (auto* b = c.head[k]) {
                    c.head[k] = b->next;
                    block_pooling::release(b, block_bytes(k));
                }
                c.kept[k] = 0;
            }
            c.closed = true;
        }
    };

    static void register_release()
    {
        thread_local release_at_exit r;
        (void)r;
        this_thread.registered = true;
    }
};

} // namespace idemgate
