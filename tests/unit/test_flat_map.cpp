#include <catch2/catch.hpp>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "support/flat_map.h"
#include "support/flat_u64_map.h"
#include "support/pointer_set.h"

using graphrw::FlatStringMap;

TEST_CASE("flat map: insert, find, erase, tombstones", "[flat_map]") {
  FlatStringMap<std::string, int> m;
  CHECK(m.find("a") == nullptr);
  CHECK(m.emplace("a", 1).second);
  CHECK_FALSE(m.emplace("a", 2).second);
  CHECK(*m.find("a") == 1);
  CHECK(m.erase("a"));
  CHECK_FALSE(m.erase("a"));
  CHECK(m.find("a") == nullptr);
  CHECK(m.emplace("a", 3).second);
  CHECK(*m.find("a") == 3);
  CHECK(m.size() == 1);
}

TEST_CASE("flat map agrees with std::map under random churn", "[flat_map]") {
  FlatStringMap<std::string, int> m;
  std::map<std::string, int> ref;
  std::mt19937 rng(7);
  for (int step = 0; step < 200000; ++step) {
    std::string key = "k" + std::to_string(rng() % 5000);
    switch (rng() % 3) {
      case 0: {
        int v = static_cast<int>(rng());
        bool inserted = m.emplace(key, v).second;
        CHECK(inserted == ref.emplace(key, v).second);
        break;
      }
      case 1:
        CHECK(m.erase(key) == (ref.erase(key) == 1));
        break;
      default: {
        int* got = m.find(key);
        auto it = ref.find(key);
        REQUIRE((got != nullptr) == (it != ref.end()));
        if (got) CHECK(*got == it->second);
      }
    }
  }
  CHECK(m.size() == ref.size());
  size_t seen = 0;
  m.forEach([&](std::string_view k, int v) {
    ++seen;
    CHECK(ref.at(std::string(k)) == v);
  });
  CHECK(seen == ref.size());
}

TEST_CASE("flat map with string_view keys owned elsewhere", "[flat_map]") {
  std::vector<std::string> owners;
  for (int i = 0; i < 1000; ++i) owners.push_back("/layers." + std::to_string(i) + "/attention/value");
  FlatStringMap<std::string_view, const std::string*> m;
  m.reserve(10);  // grows past it
  for (const auto& s : owners) CHECK(m.emplace(s, &s).second);
  for (const auto& s : owners) CHECK(*m.find(std::string(s)) == &s);
  CHECK(m.size() == 1000);
}

TEST_CASE("hash counter: counted keys, removal, regrowth", "[flat_map]") {
  graphrw::FlatHashCounter c;
  CHECK(c.add(0) == 0);  // key 0 is a valid key
  CHECK(c.add(0) == 1);
  CHECK(c.count(0) == 2);
  c.remove(0);
  c.remove(0);
  CHECK(c.count(0) == 0);
  CHECK(c.size() == 0);
  std::map<uint64_t, uint32_t> ref;
  std::mt19937_64 rng(3);
  for (int step = 0; step < 100000; ++step) {
    uint64_t k = 2 + rng() % 3000;  // 0 and 1 are one key by design
    if (rng() % 3) {
      CHECK(c.add(k) == ref[k]);
      ref[k]++;
    } else {
      c.remove(k);
      if (ref[k] > 0) ref[k]--;
    }
  }
  size_t live = 0;
  for (auto [k, n] : ref) {
    CHECK(c.count(k) == n);
    live += n > 0;
  }
  CHECK(c.size() == live);
}

namespace {
struct Named {
  std::string name;
};
struct NameOf {
  std::string_view operator()(const Named* n) const { return n->name; }
};
}  // namespace

TEST_CASE("flat index: items found by their own names, against std::map", "[flat_map]") {
  std::vector<std::unique_ptr<Named>> items;
  for (int i = 0; i < 3000; ++i) items.push_back(std::make_unique<Named>(Named{"v" + std::to_string(i)}));
  graphrw::FlatIndex<Named, NameOf> index;
  std::map<std::string, Named*> ref;
  std::mt19937_64 rng(5);
  for (int step = 0; step < 50000; ++step) {
    Named* n = items[rng() % items.size()].get();
    if (rng() % 3) {
      CHECK(index.insert(n) == (ref.count(n->name) == 0));
      ref.emplace(n->name, n);
    } else {
      CHECK(index.erase(n->name) == (ref.erase(n->name) == 1));
    }
    CHECK(index.size() == ref.size());
  }
  for (const auto& n : items) {
    auto it = ref.find(n->name);
    CHECK(index.find(n->name) == (it == ref.end() ? nullptr : it->second));
  }
  Named twin{"v1"};  // a second item of a held name is refused
  if (!index.find("v1")) CHECK(index.insert(items[1].get()));
  CHECK_FALSE(index.insert(&twin));
  CHECK(index.find("v1") == items[1].get());
}

TEST_CASE("hash counter: a count saturates and then holds its key for good", "[flat_map]") {
  graphrw::FlatHashCounter c;
  for (int i = 0; i < 70000; ++i) c.add(42);
  CHECK(c.count(42) == 0xffff);
  for (int i = 0; i < 70000; ++i) c.remove(42);
  CHECK(c.count(42) == 0xffff);
  CHECK(c.size() == 1);
  CHECK(c.count(42 | uint64_t{7} << 48) == 0xffff);  // keys are their low 48 bits
}

// A graph that a pass shrinks (outline replaces 200k nodes by 10k calls) gives
// its index and name table memory back instead of keeping the largest size.
TEST_CASE("flat index and hash counter shrink when a pass erases most entries, and keep the rest exact", "[flat_map]") {
  std::vector<std::unique_ptr<Named>> items;
  for (int i = 0; i < 100000; ++i) items.push_back(std::make_unique<Named>(Named{"v" + std::to_string(i)}));
  graphrw::FlatIndex<Named, NameOf> index;
  graphrw::FlatHashCounter counter;
  for (const auto& n : items) {
    CHECK(index.insert(n.get()));
    CHECK(counter.add(std::hash<std::string>{}(n->name)) == 0);
  }
  counter.add(std::hash<std::string>{}("v7"));  // v7 held twice
  const size_t fullIndex = index.capacity(), fullCounter = counter.capacity();
  CHECK(fullIndex >= 131072);
  for (size_t i = 0; i < items.size(); ++i)
    if (i % 100 != 7) {
      CHECK(index.erase(items[i]->name));
      counter.remove(std::hash<std::string>{}(items[i]->name));
    }
  CHECK(index.size() == 1000);
  CHECK(counter.size() == 1000);
  CHECK(index.capacity() <= fullIndex / 16);
  CHECK(counter.capacity() <= fullCounter / 16);
  for (size_t i = 0; i < items.size(); ++i) {
    const bool kept = i % 100 == 7;
    CHECK(index.find(items[i]->name) == (kept ? items[i].get() : nullptr));
    CHECK(counter.count(std::hash<std::string>{}(items[i]->name)) == (i == 7 ? 2u : kept ? 1u : 0u));
  }
  // Small tables never shrink: no rebuild churn for a few names.
  graphrw::FlatHashCounter small;
  for (uint64_t k = 2; k < 1000; ++k) small.add(k);
  const size_t smallCapacity = small.capacity();
  for (uint64_t k = 2; k < 990; ++k) small.remove(k);
  CHECK(small.capacity() == smallCapacity);
}

// Reserved for a graph's names, the index and the name table take 4/3 slots
// per name, not the next power of two (2M slots for 1.05M names).
TEST_CASE("flat index and hash counter reserve 4/3 slots per entry and grow by a quarter past it", "[flat_map]") {
  constexpr size_t kReserved = 150000;
  static_assert(kReserved >= graphrw::flat_detail::kGrowByQuarter);
  std::vector<std::unique_ptr<Named>> items;
  for (size_t i = 0; i < 2 * kReserved; ++i)
    items.push_back(std::make_unique<Named>(Named{"/blocks." + std::to_string(i)}));
  graphrw::FlatIndex<Named, NameOf> index;
  graphrw::FlatHashCounter counter;
  index.reserve(kReserved);
  counter.reserve(kReserved);
  CHECK(index.capacity() == (kReserved * 4 + 6) / 3);  // 200,002: not 262,144
  CHECK(counter.capacity() == index.capacity());
  size_t indexGrowths = 0, counterGrowths = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const size_t ci = index.capacity(), cc = counter.capacity();
    REQUIRE(index.insert(items[i].get()));
    REQUIRE(counter.add(std::hash<std::string>{}(items[i]->name)) == 0);
    if (i < kReserved) {
      CHECK(index.capacity() == ci);  // within the reserve: no rebuild
      CHECK(counter.capacity() == cc);
    }
    if (index.capacity() != ci &&
        indexGrowths == 0) {  // full past the reserve: room for a quarter more, not twice as many
      CHECK(i >= kReserved);
      CHECK(index.capacity() == ((i + i / 4) * 4 + 6) / 3);
      CHECK(counter.capacity() == index.capacity());
    }
    indexGrowths += index.capacity() != ci;
    counterGrowths += counter.capacity() != cc;
  }
  // 150,000 -> 187,500 -> 234,375 -> 292,968 -> 366,210 entries: four
  // rebuilds where doubling took one, each at least a quarter of the entries apart.
  CHECK(indexGrowths == 4);
  CHECK(counterGrowths == 4);
  CHECK(index.capacity() * 3 >= items.size() * 4);
  size_t found = 0, counted = 0;
  for (const auto& n : items) {
    found += index.find(n->name) == n.get();
    counted += counter.count(std::hash<std::string>{}(n->name)) == 1;
  }
  CHECK(found == items.size());
  CHECK(counted == items.size());
  CHECK(index.find("/blocks.x") == nullptr);
}

TEST_CASE("a small flat index doubles past its reserve", "[flat_map]") {
  constexpr size_t kReserved = 1000;
  std::vector<std::unique_ptr<Named>> items;
  for (size_t i = 0; i < 2 * kReserved; ++i) items.push_back(std::make_unique<Named>(Named{"n" + std::to_string(i)}));
  graphrw::FlatIndex<Named, NameOf> index;
  index.reserve(kReserved);
  const size_t reserved = index.capacity();
  CHECK(reserved == (kReserved * 4 + 6) / 3);
  size_t before = 0;
  for (size_t i = 0; i < items.size() && index.capacity() == reserved; ++i) {
    before = i;
    index.insert(items[i].get());
  }
  CHECK(before >= kReserved);
  CHECK(index.capacity() == (2 * before * 4 + 6) / 3);  // twice the entries it held
}

// A pass that erases as it adds (expand drops each call as its body comes in)
// leaves tombstones: a full table then drops them, it does not double.
TEST_CASE("flat index and hash counter drop tombstones instead of doubling when a pass erases as it adds",
          "[flat_map]") {
  constexpr size_t kReserve = 100000, kLive = 88000, kSteps = 40000;
  std::vector<std::unique_ptr<Named>> items;
  for (size_t i = 0; i < kLive + kSteps; ++i) items.push_back(std::make_unique<Named>(Named{"t" + std::to_string(i)}));
  graphrw::FlatIndex<Named, NameOf> index;
  graphrw::FlatHashCounter counter;
  index.reserve(kReserve);
  counter.reserve(kReserve);
  const size_t reserved = index.capacity();
  for (size_t i = 0; i < kLive; ++i) {
    index.insert(items[i].get());
    counter.add(std::hash<std::string>{}(items[i]->name));
  }
  // One out, one in, 40,000 times: live stays 88,000 while 12,000 free slots
  // fill with tombstones three times over.
  for (size_t i = 0; i < kSteps; ++i) {
    index.erase(items[i]->name);
    counter.remove(std::hash<std::string>{}(items[i]->name));
    index.insert(items[kLive + i].get());
    counter.add(std::hash<std::string>{}(items[kLive + i]->name));
  }
  CHECK(index.size() == kLive);
  CHECK(counter.size() == kLive);
  CHECK(index.capacity() == reserved);  // doubling would give 266,670 slots
  CHECK(counter.capacity() == reserved);
  size_t right = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    const bool live = i >= kSteps;
    right += (index.find(items[i]->name) == (live ? items[i].get() : nullptr)) &&
             counter.count(std::hash<std::string>{}(items[i]->name)) == (live ? 1u : 0u);
  }
  CHECK(right == items.size());
}

TEST_CASE("flat pointer set agrees with std::set under churn, shrinks, and holds null", "[flat_map]") {
  // Real heap objects: their addresses share alignment and high bits.
  std::vector<std::unique_ptr<int>> objects;
  for (int i = 0; i < 20000; ++i) objects.push_back(std::make_unique<int>(i));
  graphrw::FlatPointerSet<int> set;
  std::set<const int*> ref;
  std::mt19937 rng(11);
  for (int step = 0; step < 300000; ++step) {
    const int* p = step % 997 == 0 ? nullptr : objects[rng() % objects.size()].get();
    switch (rng() % 3) {
      case 0:
        CHECK(set.insert(p) == ref.insert(p).second);
        break;
      case 1:
        CHECK(set.erase(p) == (ref.erase(p) == 1));
        break;
      default:
        CHECK(set.contains(p) == (ref.count(p) == 1));
    }
  }
  REQUIRE(set.size() == ref.size());
  for (const auto& o : objects) CHECK(set.contains(o.get()) == (ref.count(o.get()) == 1));
  // Erasing almost everything gives the memory back; the rest stays exact.
  for (const auto& o : objects) set.insert(o.get());
  size_t full = set.capacity();
  for (size_t i = 10; i < objects.size(); ++i) CHECK(set.erase(objects[i].get()));
  CHECK(set.size() == 10u + ref.count(nullptr));
  CHECK(set.capacity() < full / 8);
  for (size_t i = 0; i < 10; ++i) CHECK(set.contains(objects[i].get()));
  CHECK_FALSE(set.contains(objects[10].get()));
  set.clear();
  CHECK(set.empty());
  CHECK_FALSE(set.contains(objects[0].get()));
  // A small table is emptied in place and used again.
  for (int round = 0; round < 3; ++round) {
    CHECK(set.insert(objects[5].get()));
    CHECK_FALSE(set.insert(objects[5].get()));
    CHECK(set.contains(objects[5].get()));
    CHECK_FALSE(set.contains(objects[6].get()));
    set.clear();
    CHECK_FALSE(set.contains(objects[5].get()));
    CHECK(set.capacity() > 0);
  }
}

TEST_CASE("flat pointer set reserved for a million takes 4/3 of the slots, not the next power of two", "[flat_map]") {
  // A pass about to change every node of a million-node graph reserves the set.
  std::vector<int64_t> items(1000000);
  graphrw::FlatPointerSet<int64_t> set;
  set.reserve(items.size());
  const size_t reserved = set.capacity();
  CHECK(reserved >= items.size() * 4 / 3);
  CHECK(reserved < items.size() * 4 / 3 + 16);  // 2^21 = 2,097,152 before
  for (const auto& x : items) CHECK(set.insert(&x));
  CHECK(set.capacity() == reserved);  // filled without a rebuild
  CHECK(set.size() == items.size());
  size_t found = 0;
  for (const auto& x : items) found += set.contains(&x);
  CHECK(found == items.size());
  std::vector<int64_t> more(16);
  CHECK_FALSE(set.contains(&more[0]));
  for (const auto& x : more) CHECK(set.insert(&x));  // past 3/4: grows
  CHECK(set.capacity() > reserved);
  CHECK(set.contains(&more.back()));
  CHECK(set.contains(&items.back()));
}

TEST_CASE("flat u64 map agrees with std::map as it grows, on packed pointer keys", "[flat_map]") {
  std::vector<std::unique_ptr<int>> objects;
  for (int i = 0; i < 5000; ++i) objects.push_back(std::make_unique<int>(i));
  graphrw::FlatU64Map<uint32_t> map;
  std::map<uint64_t, uint32_t> ref;
  std::mt19937 rng(5);
  for (int step = 0; step < 200000; ++step) {
    // Keys as the pattern matcher packs them: an index above a heap address.
    uint64_t key = uint64_t{rng() % 40} << 49 | reinterpret_cast<uintptr_t>(objects[rng() % objects.size()].get());
    if (rng() % 2) {
      ++map[key];
      ++ref[key];
    } else {
      const uint32_t* got = map.find(key);
      auto it = ref.find(key);
      REQUIRE((got != nullptr) == (it != ref.end()));
      if (got) CHECK(*got == it->second);
    }
  }
  CHECK(map.size() == ref.size());
  for (const auto& [key, count] : ref) {
    const uint32_t* got = map.find(key);
    REQUIRE(got);
    CHECK(*got == count);
  }
  CHECK(map[12345] == 0u);  // a new key starts value-initialised
  CHECK(map.size() == ref.size() + 1);
}

TEST_CASE("flat u64 map clear empties it and lets a mostly empty table go", "[flat_map]") {
  graphrw::FlatU64Map<bool> m;
  for (uint64_t k = 1; k <= 10; ++k) m[k] = true;
  const size_t small = m.capacity();
  m.clear();
  CHECK(m.size() == 0);
  CHECK(m.capacity() == small);  // a small table is kept for the next use
  CHECK(m.find(3) == nullptr);
  m[3] = true;
  CHECK(m.find(3) != nullptr);
  CHECK(m.find(4) == nullptr);
  for (uint64_t k = 1; k <= 10000; ++k) m[k] = true;
  m.clear();  // full when cleared: kept, every slot empty
  CHECK(m.capacity() >= 10000);
  CHECK(m.find(5000) == nullptr);
  for (uint64_t k = 1; k <= 3; ++k) m[k] = true;
  m.clear();  // 3 entries in thousands of slots: let go
  CHECK(m.capacity() == 0);
  m[7] = true;
  CHECK(m.size() == 1);
  CHECK(*m.find(7));
}
