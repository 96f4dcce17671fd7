// SPDX-License-Identifier: Apache-2.0
#pragma once
// Per-request objects in storage a thread reuses: make_recycled<T>(args...) constructs a T in a
// block the thread freed earlier (a few are kept per type and thread) and recycled_ptr<T>
// destroys it and keeps the block. A request's larger state (its phases, its parser, a store
// command) then lives outside the coroutine frames that wait on it: Asio reuses frames only up to
// about 1 KiB, so a frame holding that state went to the allocator on every request, and
// displaced the smaller frames Asio had kept. recycling_allocator<T> does the same for
// std::allocate_shared.
// The blocks come from a block_pool (<idemgate/common/block_pool.hpp>) per block size: a block
// freed on another thread joins that thread's blocks; under AddressSanitizer every block goes to
// the allocator.
#include <cstddef>
#include <cstdint>
#include <idemgate/common/block_pool.hpp>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace idemgate {

namespace recycling {

inline constexpr bool enabled = block_pooling::enabled;
inline constexpr std::uint32_t max_kept = 16; // blocks kept per type and thread

// The blocks of one size, shared by every type of that size.
template<std::size_t Size>
using pool = block_pool<Size, 1, max_kept>;

// How many blocks of one size this thread keeps (what tests look at).
template<std::size_t Size>
struct shelf {
    std::uint32_t kept;

    static shelf of_this_thread() noexcept { return {pool<Size>::this_thread.kept[0]}; }
};

template<std::size_t Size>
void* take() // a block of Size bytes
{
    return pool<Size>::allocate(Size);
}

template<std::size_t Size>
void give_back(void* p) noexcept
{
    pool<Size>::deallocate(p, Size);
}

// Blocks are shared by every type of one size (rounded up to 16 bytes).
template<class T>
inline constexpr std::size_t block_size =
    ((sizeof(T) < sizeof(block_pooling::free_block) ? sizeof(block_pooling::free_block) : sizeof(T)) + 15) &
    ~std::size_t(15);

} // namespace recycling

template<class T>
struct recycled_delete {
    void operator()(T* p) const noexcept
    {
        p->~T();
        recycling::give_back<recycling::block_size<T>>(p);
    }
};

template<class T>
using recycled_ptr = std::unique_ptr<T, recycled_delete<T>>;

template<class T, class... Args>
recycled_ptr<T> make_recycled(Args&&... args)
{
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    void* block = recycling::take<recycling::block_size<T>>();
    try {
        return recycled_ptr<T>(::new (block) T(std::forward<Args>(args)...));
    } catch (...) {
        recycling::give_back<recycling::block_size<T>>(block);
        throw;
    }
}

// For std::allocate_shared: single objects (the control block with its value) come from the
// thread's blocks; arrays go to the allocator.
template<class T>
struct recycling_allocator {
    using value_type = T;
    using is_always_equal = std::true_type;
    static_assert(alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

    recycling_allocator() noexcept = default;
    template<class U>
    recycling_allocator(const recycling_allocator<U>&) noexcept
    {
    }

    T* allocate(std::size_t n)
    {
        if (n == 1)
            return static_cast<T*>(recycling::take<recycling::block_size<T>>());
        return std::allocator<T>().allocate(n);
    }
    void deallocate(T* p, std::size_t n) noexcept
    {
        if (n == 1)
            recycling::give_back<recycling::block_size<T>>(p);
        else
            std::allocator<T>().deallocate(p, n);
    }

    template<class U>
    bool operator==(const recycling_allocator<U>&) const noexcept
    {
        return true;
    }
};

} // namespace idemgate
