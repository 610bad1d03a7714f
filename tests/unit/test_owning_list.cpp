#include <catch2/catch.hpp>
#include <iterator>
#include <list>
#include <memory>
#include <random>
#include <vector>

#include "support/owning_list.h"

namespace {

struct Item {
  explicit Item(int v) : value(v) {}
  int value;

 private:
  template <typename>
  friend class graphrw::OwningList;
  std::unique_ptr<Item> next_;
  Item* prev_ = nullptr;
};

using List = graphrw::OwningList<Item>;

std::vector<int> forward(const List& l) {
  std::vector<int> out;
  for (const auto& item : l) out.push_back(item->value);
  return out;
}

std::vector<int> backward(const List& l) {
  std::vector<int> out;
  for (auto it = l.end(); it != l.begin();) out.push_back((*--it)->value);
  return out;
}

}  // namespace

TEST_CASE("owning list: insert, erase, splice, both directions", "[owning_list]") {
  List l;
  CHECK(l.empty());
  for (int v : {1, 2, 3}) l.insert(l.end(), std::make_unique<Item>(v));
  Item* two = std::next(l.begin())->get();
  l.insert(l.at(two), std::make_unique<Item>(9));  // before 2
  CHECK(forward(l) == std::vector<int>{1, 9, 2, 3});
  CHECK(backward(l) == std::vector<int>{3, 2, 9, 1});
  CHECK(l.front()->value == 1);
  CHECK(l.back()->value == 3);
  CHECK(l.size() == 4);

  auto after = l.erase(l.begin());  // the head
  CHECK(after->get()->value == 9);
  CHECK(forward(l) == std::vector<int>{9, 2, 3});
  l.erase(std::prev(l.end()));  // the tail
  CHECK(forward(l) == std::vector<int>{9, 2});
  CHECK(backward(l) == std::vector<int>{2, 9});

  List other;
  other.splice(other.end(), l, l.at(two));  // the node itself moves: `two` stays valid
  CHECK(two->value == 2);
  CHECK(forward(l) == std::vector<int>{9});
  CHECK(forward(other) == std::vector<int>{2});
  l.splice(l.begin(), other, other.begin());
  CHECK(forward(l) == std::vector<int>{2, 9});
  CHECK(other.empty());
  l.splice(l.at(two), l, l.at(two));  // onto itself: nothing moves
  CHECK(forward(l) == std::vector<int>{2, 9});
  l.swap(other);
  CHECK(l.empty());
  CHECK(forward(other) == std::vector<int>{2, 9});
}

TEST_CASE("owning list agrees with std::list under random edits", "[owning_list]") {
  List l;
  std::list<int> ref;
  std::mt19937 rng(5);
  int next = 0;
  for (int step = 0; step < 5000; ++step) {
    uint32_t x = rng();
    size_t at = ref.empty() ? 0 : x % (ref.size() + 1);
    if (x % 3 != 0 || ref.empty()) {
      l.insert(std::next(l.begin(), static_cast<std::ptrdiff_t>(at)), std::make_unique<Item>(next));
      ref.insert(std::next(ref.begin(), static_cast<std::ptrdiff_t>(at)), next);
      ++next;
    } else {
      at %= ref.size();
      l.erase(std::next(l.begin(), static_cast<std::ptrdiff_t>(at)));
      ref.erase(std::next(ref.begin(), static_cast<std::ptrdiff_t>(at)));
    }
    REQUIRE(l.size() == ref.size());
    REQUIRE(forward(l) == std::vector<int>(ref.begin(), ref.end()));
  }
  REQUIRE(backward(l) == std::vector<int>(ref.rbegin(), ref.rend()));
}

TEST_CASE("owning list: a million elements are destroyed without recursion", "[owning_list]") {
  // Each element owns the next: destroying the head recursively would take a
  // million stack frames (ASan's stack would overflow long before).
  auto l = std::make_unique<List>();
  for (int i = 0; i < 1000000; ++i) l->insert(l->end(), std::make_unique<Item>(i));
  CHECK(l->size() == 1000000);
  CHECK(l->back()->value == 999999);
  l.reset();
  SUCCEED();
}
