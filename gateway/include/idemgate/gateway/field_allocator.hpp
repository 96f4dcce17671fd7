// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator of the header fields the gateway holds. Beast allocates one block per field
// line, so every request and answer cost one allocation per field; this allocator keeps the
// small blocks a thread frees (a bounded number per size class) and hands them out again, so the
// requests of a keep-alive connection reuse the blocks of the ones before.
// Stateless: any instance frees what any other allocated, on any thread (a block freed on
// another thread joins that thread's cache).
#include <boost/beast/http/fields.hpp>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace idemgate::gateway {

namespace field_pool {

inline constexpr std::size_t granule = 64;     // size classes of 64, 128, ..., 512 bytes
inline constexpr std::size_t classes = 8;      // larger blocks go to the allocator directly
inline constexpr std::uint32_t max_kept = 128; // blocks kept per class and thread

// Under AddressSanitizer every block goes to the allocator, so that a field used after it was
// freed is still reported.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool pooling = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool pooling = false;
#else
inline constexpr bool pooling = true;
#endif
#else
inline constexpr bool pooling = true;
#endif

// Sized when the compiler offers sized deallocation (clang leaves it off by default).
inline void give_back(void* p, [[maybe_unused]] std::size_t bytes) noexcept
{
#if defined(__cpp_sized_deallocation)
    ::operator delete(p, bytes);
#else
    ::operator delete(p);
#endif
}

struct free_block {
    free_block* next;
};

// Trivially destructible, so it is still readable while the thread's other objects are
// destroyed; `release` empties it at thread exit and closes it.
struct cache {
    free_block* head[classes];
    std::uint32_t kept[classes];
    bool registered; // the thread-exit release is set up
    bool closed;     // released: blocks go straight back to the allocator
};

inline thread_local cache this_thread{};

struct release {
    ~release()
    {
        auto& c = this_thread;
        for (std::size_t k = 0; k < classes; ++k) {
            while (auto* b = c.head[k]) {
                c.head[k] = b->next;
                give_back(b, (k + 1) * granule);
            }
            c.kept[k] = 0;
        }
        c.closed = true;
    }
};

inline void register_release()
{
    thread_local release r;
    (void)r;
    this_thread.registered = true;
}

inline std::size_t class_of(std::size_t bytes) noexcept
{
    return bytes == 0 ? 0 : (bytes - 1) / granule;
}

inline void* allocate(std::size_t bytes)
{
    auto k = class_of(bytes);
    if (!pooling || k >= classes)
        return ::operator new(bytes);
    auto& c = this_thread;
    if (auto* b = c.head[k]) {
        c.head[k] = b->next;
        --c.kept[k];
        return b;
    }
    return ::operator new((k + 1) * granule);
}

inline void deallocate(void* p, std::size_t bytes) noexcept
{
    auto k = class_of(bytes);
    if (!pooling || k >= classes) {
        give_back(p, bytes);
        return;
    }
    auto& c = this_thread;
    if (c.closed || c.kept[k] >= max_kept) {
        give_back(p, (k + 1) * granule);
        return;
    }
    if (!c.registered)
        register_release();
    auto* b = static_cast<free_block*>(p);
    b->next = c.head[k];
    c.head[k] = b;
    ++c.kept[k];
}

} // namespace field_pool

template<class T>
struct field_allocator {
    using value_type = T;
    using is_always_equal = std::true_type;
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

    field_allocator() noexcept = default;
    template<class U>
    field_allocator(const field_allocator<U>&) noexcept
    {
    }

    T* allocate(std::size_t n)
    {
        if (n > SIZE_MAX / sizeof(T))
            throw std::bad_array_new_length();
        return static_cast<T*>(field_pool::allocate(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) noexcept { field_pool::deallocate(p, n * sizeof(T)); }

    template<class U>
    bool operator==(const field_allocator<U>&) const noexcept
    {
        return true;
    }
};

// The fields of every request and answer on the gateway's request path.
using pooled_fields = boost::beast::http::basic_fields<field_allocator<char>>;

} // namespace idemgate::gateway
