#include <catch2/catch.hpp>
#include <random>
#include <vector>

#include "ir/ir.h"
#include "support/small_vector.h"

using graphrw::SmallVector;

static_assert(sizeof(SmallVector<void*, 2>) == sizeof(std::vector<void*>), "two pointers inline in 24 bytes");
static_assert(sizeof(graphrw::ir::UseList) == sizeof(std::vector<graphrw::ir::Use>), "one Use inline in 24 bytes");

TEST_CASE("small vector: inline, then the heap, keeping order", "[small_vector]") {
  SmallVector<int64_t, 2> v;
  CHECK(v.empty());
  CHECK(v.capacity() == 2);
  v.push_back(1);
  v.push_back(2);
  CHECK(v.capacity() == 2);  // still inline
  v.push_back(3);
  CHECK(v.capacity() >= 3);
  CHECK(std::vector<int64_t>(v) == std::vector<int64_t>{1, 2, 3});
  v.push_back(v[0]);  // an element of its own storage, while it grows
  CHECK(std::vector<int64_t>(v) == std::vector<int64_t>{1, 2, 3, 1});
  v.erase(v.begin() + 1);
  CHECK(std::vector<int64_t>(v) == std::vector<int64_t>{1, 3, 1});
  v.insert(v.begin(), 9);
  CHECK(std::vector<int64_t>(v) == std::vector<int64_t>{9, 1, 3, 1});
  v.resize(6, 7);
  CHECK(std::vector<int64_t>(v) == std::vector<int64_t>{9, 1, 3, 1, 7, 7});
  CHECK(v.at(5) == 7);
  CHECK_THROWS_AS(v.at(6), std::out_of_range);
  v.clear();
  CHECK(v.empty());
}

TEST_CASE("small vector: copies and moves, inline and on the heap", "[small_vector]") {
  for (size_t n : {0, 1, 2, 3, 9}) {
    SmallVector<int64_t, 2> a;
    for (size_t i = 0; i < n; ++i) a.push_back(static_cast<int64_t>(i * 10));
    SmallVector<int64_t, 2> copy = a;
    CHECK(copy == a);
    SmallVector<int64_t, 2> moved = std::move(copy);
    CHECK(moved == a);
    CHECK(copy.empty());  // NOLINT: moved-from is empty and usable
    copy.push_back(5);
    CHECK(copy.size() == 1);
    SmallVector<int64_t, 2> assigned{1, 2, 3, 4};
    assigned = a;  // a shorter list into heap room
    CHECK(assigned == a);
    assigned = std::vector<int64_t>{4, 5, 6};
    CHECK(std::vector<int64_t>(assigned) == std::vector<int64_t>{4, 5, 6});
    assigned = std::move(moved);
    CHECK(assigned == a);
  }
}

TEST_CASE("small vector agrees with std::vector under random edits", "[small_vector]") {
  SmallVector<uint32_t, 2> v;
  std::vector<uint32_t> ref;
  std::mt19937 rng(11);
  for (int step = 0; step < 20000; ++step) {
    uint32_t x = rng();
    switch (x % 6) {
      case 0:
      case 1:
        v.push_back(x);
        ref.push_back(x);
        break;
      case 2:
        if (!ref.empty()) {
          v.pop_back();
          ref.pop_back();
        }
        break;
      case 3:
        if (!ref.empty()) {
          size_t at = x % ref.size();
          v.erase(v.begin() + static_cast<std::ptrdiff_t>(at));
          ref.erase(ref.begin() + static_cast<std::ptrdiff_t>(at));
        }
        break;
      case 4: {
        size_t at = ref.empty() ? 0 : x % (ref.size() + 1);
        v.insert(v.begin() + static_cast<std::ptrdiff_t>(at), x);
        ref.insert(ref.begin() + static_cast<std::ptrdiff_t>(at), x);
        break;
      }
      default:
        if (x % 50 == 5) {
          v = SmallVector<uint32_t, 2>(v);  // a copy of itself, through a temporary
        }
        break;
    }
    REQUIRE(std::vector<uint32_t>(v) == ref);
  }
}
