#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "support/fixed_pool.h"

using graphrw::FixedPool;

namespace {
// Each test case uses its own block size: one pool per size per process.
template <size_t Size>
std::vector<char*> take(size_t n) {
  std::vector<char*> blocks;
  for (size_t i = 0; i < n; ++i) blocks.push_back(static_cast<char*>(FixedPool<Size>::allocate()));
  return blocks;
}
}  // namespace

TEST_CASE("fixed pool blocks are distinct, whole and reused after free", "[fixed_pool]") {
  constexpr size_t kSize = 40;
  const size_t n = FixedPool<kSize>::kBlocksPerSlab * 3 + 7;  // beyond one slab
  auto blocks = take<kSize>(n);
  for (size_t i = 0; i < n; ++i) std::memset(blocks[i], static_cast<int>(i & 0x7f), kSize);
  std::vector<char*> sorted = blocks;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  // No two blocks overlap: every byte still holds its block's pattern.
  size_t intact = 0;
  for (size_t i = 0; i < n; ++i)
    intact += std::all_of(blocks[i], blocks[i] + kSize, [&](char c) { return c == static_cast<char>(i & 0x7f); });
  CHECK(intact == n);
  for (size_t i = 0; i < sorted.size() - 1; ++i) CHECK(sorted[i] + kSize <= sorted[i + 1]);

  char* last = blocks.back();
  for (char* b : blocks) FixedPool<kSize>::deallocate(b);
  FixedPool<kSize>::deallocate(nullptr);  // like delete nullptr: nothing
  void* again = FixedPool<kSize>::allocate();
#ifndef GRAPHRW_FIXED_POOL_OFF
  CHECK(again == last);  // the free list hands back the last freed block first
#else
  (void)last;  // under AddressSanitizer each block is its own operator new
#endif
  FixedPool<kSize>::deallocate(again);
}

TEST_CASE("fixed pool blocks of one slab sit back to back, without headers", "[fixed_pool]") {
  constexpr size_t kSize = 72;
  const size_t n = FixedPool<kSize>::kBlocksPerSlab * 2;
  auto blocks = take<kSize>(n);
  size_t adjacent = 0;
  for (size_t i = 1; i < n; ++i) adjacent += blocks[i] == blocks[i - 1] + kSize;
#ifndef GRAPHRW_FIXED_POOL_OFF
  CHECK(adjacent == n - 2);  // two slabs: one break between them
#else
  CHECK(adjacent < n / 2);  // operator new's blocks carry the allocator's header
#endif
  for (char* b : blocks) FixedPool<kSize>::deallocate(b);
}

TEST_CASE("fixed pool is shared by threads that free each other's blocks", "[fixed_pool]") {
  constexpr size_t kSize = 56;
  constexpr size_t kPerThread = 20000;
  std::vector<char*> a, b;
  std::thread t1([&] { a = take<kSize>(kPerThread); });
  std::thread t2([&] { b = take<kSize>(kPerThread); });
  t1.join();
  t2.join();
  std::set<char*> all(a.begin(), a.end());
  all.insert(b.begin(), b.end());
  CHECK(all.size() == 2 * kPerThread);
  // Each thread frees the other's blocks, then both take them again.
  std::thread f1([&] {
    for (char* p : b) FixedPool<kSize>::deallocate(p);
  });
  std::thread f2([&] {
    for (char* p : a) FixedPool<kSize>::deallocate(p);
  });
  f1.join();
  f2.join();
  auto c = take<kSize>(2 * kPerThread);
  std::set<char*> again(c.begin(), c.end());
  CHECK(again.size() == 2 * kPerThread);
#ifndef GRAPHRW_FIXED_POOL_OFF
  CHECK(again == all);  // no new slab: the freed blocks came back
#endif
  for (char* p : c) FixedPool<kSize>::deallocate(p);
}

TEST_CASE("fixed pool: blocks freed under a Hold are not reused until the last Hold ends", "[fixed_pool]") {
  constexpr size_t kSize = 56;
  using Pool = FixedPool<kSize>;
  std::set<void*> freed;
  {
    Pool::Hold outer;
    std::vector<void*> blocks;
    for (int i = 0; i < 64; ++i) blocks.push_back(Pool::allocate());
    {
      Pool::Hold inner;  // nested: released only with the outer one
      for (void* b : blocks) {
        Pool::deallocate(b);
        freed.insert(b);
      }
    }
    // None of the 64 freed blocks comes back while a Hold is alive.
    std::vector<void*> fresh;
    for (int i = 0; i < 64; ++i) fresh.push_back(Pool::allocate());
    for (void* b : fresh) CHECK(freed.count(b) == 0);
    for (void* b : fresh) Pool::deallocate(b);  // held too
  }
#ifndef GRAPHRW_FIXED_POOL_OFF
  // After the last Hold, held blocks are on the free list again.
  std::set<void*> reused;
  std::vector<void*> all;
  for (int i = 0; i < 128; ++i) all.push_back(Pool::allocate());
  for (void* b : all) reused.insert(b);
  size_t back = 0;
  for (void* b : freed) back += reused.count(b);
  CHECK(back == freed.size());  // every held block was handed out again
  for (void* b : all) Pool::deallocate(b);
#endif
}
