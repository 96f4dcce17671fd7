// SPDX-License-Identifier: Apache-2.0
#pragma once
// The allocator of the header fields the gateway holds. Beast allocates one block per field
// line, so every request and answer cost one allocation per field; this allocator keeps the
// small blocks a thread frees (a bounded number per size class, in a block_pool) and hands them
// out again, so the requests of a keep-alive connection reuse the blocks of the ones before.
// Stateless: any instance frees what any other allocated, on any thread (a block freed on
// another thread joins that thread's cache).
#include <boost/beast/http/fields.hpp>
#include <cstddef>
#include <cstdint>
#include <idemgate/common/block_pool.hpp>
#include <new>
#include <type_traits>

namespace idemgate::gateway {

namespace field_pool {

inline constexpr std::size_t granule = 64;     // size classes of 64, 128, ..., 512 bytes
inline constexpr std::size_t classes = 8;      // larger blocks go to the allocator directly
inline constexpr std::uint32_t max_kept = 128; // blocks kept per class and thread

// Under AddressSanitizer every block goes to the allocator, so that a field used after it was
// freed is still reported.
inline constexpr bool pooling = block_pooling::enabled;

// This thread's blocks of each class; larger blocks go to the allocator.
using blocks = block_pool<granule, classes, max_kept>;

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
        return static_cast<T*>(field_pool::blocks::allocate(n * sizeof(T)));
    }
    void deallocate(T* p, std::size_t n) noexcept { field_pool::blocks::deallocate(p, n * sizeof(T)); }

    template<class U>
    bool operator==(const field_allocator<U>&) const noexcept
    {
        return true;
    }
};

// The fields of every request and answer on the gateway's request path.
using pooled_fields = boost::beast::http::basic_fields<field_allocator<char>>;

} // namespace idemgate::gateway
