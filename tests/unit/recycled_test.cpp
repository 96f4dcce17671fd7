// SPDX-License-Identifier: Apache-2.0
#include <doctest/doctest.h>
#include <idemgate/common/recycled.hpp>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace idemgate;

namespace {

struct counted {
    static inline int alive = 0;
    std::string text;
    char pad[300];
    explicit counted(std::string t) : text(std::move(t)) { ++alive; }
    ~counted() { --alive; }
};

struct throws_on_build {
    char pad[200];
    explicit throws_on_build(bool fail)
    {
        if (fail)
            throw std::runtime_error("refused");
    }
};

} // namespace

TEST_CASE("recycled: an object is built and destroyed in a block the thread hands out again")
{
    void* first_block = nullptr;
    {
        auto p = make_recycled<counted>("one");
        CHECK(counted::alive == 1);
        CHECK(p->text == "one");
        first_block = p.get();
    }
    CHECK(counted::alive == 0);
    auto q = make_recycled<counted>(std::string(100, 'x'));
    CHECK(counted::alive == 1);
    CHECK(q->text.size() == 100);
    if (recycling::enabled) // sanitizer builds hand every block to the allocator
        CHECK(static_cast<void*>(q.get()) == first_block);
}

TEST_CASE("recycled: a thread keeps at most max_kept blocks of a size; the rest go to the allocator")
{
    std::vector<recycled_ptr<counted>> many;
    for (std::uint32_t i = 0; i < recycling::max_kept + 4; ++i)
        many.push_back(make_recycled<counted>("x"));
    CHECK(counted::alive == static_cast<int>(recycling::max_kept + 4));
    many.clear();
    CHECK(counted::alive == 0);
    if (recycling::enabled)
        CHECK(recycling::shelf<recycling::block_size<counted>>::of_this_thread().kept == recycling::max_kept);
}

TEST_CASE("recycled: a constructor that throws leaves its block for the next object")
{
    CHECK_THROWS_AS(make_recycled<throws_on_build>(true), std::runtime_error);
    auto ok = make_recycled<throws_on_build>(false);
    CHECK(ok != nullptr);
}

TEST_CASE("recycled: shared objects through recycling_allocator, freed on another thread")
{
    auto shared = std::allocate_shared<counted>(recycling_allocator<counted>(), "shared");
    CHECK(counted::alive == 1);
    void* block = nullptr;
    std::thread other([s = std::move(shared)]() mutable {
        CHECK(s->text == "shared");
        s.reset(); // the block joins this thread's blocks, released when it ends
        CHECK(counted::alive == 0);
    });
    other.join();
    CHECK(counted::alive == 0);
    auto again = std::allocate_shared<counted>(recycling_allocator<counted>(), "again");
    block = again.get();
    again.reset();
    auto third = std::allocate_shared<counted>(recycling_allocator<counted>(), "third");
    if (recycling::enabled)
        CHECK(static_cast<void*>(third.get()) == block);
}
