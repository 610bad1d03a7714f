// A string-keyed hash map with open addressing (linear probing) in one array.
// Each slot keeps the key's hash, so a lookup usually costs one cache miss,
// where std::unordered_map costs a bucket, a node and the key's heap string:
// this is what keeps name lookups linear at millions of names.
// Key is std::string (owned keys) or std::string_view (keys owned elsewhere,
// which must outlive their entry).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphrw {

namespace flat_detail {

// Slots (a power of two) for `n` live entries at a load factor of at most 3/4:
// never fewer than `current`, and twice as many when a table with no
// tombstones to drop is full.
inline size_t capacityFor(size_t n, size_t current, bool noTombstones) {
  size_t capacity = 16;
  while (capacity * 3 < n * 4 + 4) capacity *= 2;
  if (capacity < current) capacity = current;
  if (capacity == current && noTombstones && current > 0) capacity *= 2;
  return capacity;
}

// Slots for `n` live entries at a load factor of at most 3/4, any count (for
// tables placing by range reduction, slotOf): reserved for a million names, a
// table takes 1.33M slots, not the next power of two's 2M. Never fewer than
// `current`.
inline size_t exactCapacityFor(size_t n, size_t current) {
  size_t capacity = (n * 4 + 6) / 3;
  if (capacity < 16) capacity = 16;
  return capacity < current ? current : capacity;
}
// Entries to make room for when an insert finds a table full (`used` slots
// taken, `live` of them entries, the rest tombstones): where tombstones are
// 1/32 of the slots taken or more (a pass that erases as it adds), the live
// entries and an eighth more (the tombstones go, the table grows little);
// else twice the entries for a small table, a quarter more for a large one
// (kGrowByQuarter entries or more: a pass adding a few nodes to a loaded
// million-node graph, whose tables were sized exactly, held the old and a
// doubled table at once, 4 slots an entry). Either way the next rebuild is at
// least live/8 inserts away: amortised O(1).
constexpr size_t kGrowByQuarter = 65536;
inline size_t roomForOneMore(size_t live, size_t used) {
  if ((used - live) * 32 >= used) return live + live / 8 + 1;
  if (live >= kGrowByQuarter) return live + live / 4;
  return live * 2 > live + 1 ? live * 2 : live + 1;
}

// A 48-bit hash's slot among `n` of any count: the high bits of hash * n
// (Lemire's range reduction), uniform for uniform hashes, without a division.
inline size_t slotOf(uint64_t hash48, size_t n) {
  __extension__ typedef unsigned __int128 U128;
  return static_cast<size_t>((static_cast<U128>(hash48) * n) >> 48);
}

// A table of at least this many slots whose live entries fall under 1/16 of
// them (a pass erased most of a graph) is rebuilt at about 3/8 load: the
// memory goes back, and the next shrink needs the entries to fall 4x again.
constexpr size_t kShrinkFrom = 4096;
inline bool sparse(size_t live, size_t slots) { return slots >= kShrinkFrom && live * 16 < slots; }
inline size_t shrunkCapacity(size_t live) { return capacityFor(live * 2, 0, false); }

// splitmix64's finaliser: every bit of the result depends on every bit of x
// (for keys that are addresses, whose low and high bits repeat).
inline uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace flat_detail

template <typename Key, typename Value>
class FlatStringMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  Value* find(std::string_view key) {
    if (slots_.empty()) return nullptr;
    uint64_t h = hashOf(key);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.state == kEmpty) return nullptr;
      if (s.state == kFull && s.hash == h && std::string_view(s.key) == key) return &s.value;
    }
  }
  const Value* find(std::string_view key) const { return const_cast<FlatStringMap*>(this)->find(key); }

  // Inserts when absent; returns the entry and whether it was inserted.
  std::pair<Value*, bool> emplace(std::string_view key, Value value) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow(size_ + 1);
    uint64_t h = hashOf(key);
    Slot* reuse = nullptr;
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.state == kEmpty) {
        Slot* target = reuse ? reuse : &s;
        if (!reuse) ++used_;
        target->state = kFull;
        target->hash = h;
        target->key = Key(key);
        target->value = std::move(value);
        ++size_;
        return {&target->value, true};
      }
      if (s.state == kDeleted) {
        if (!reuse) reuse = &s;
      } else if (s.hash == h && std::string_view(s.key) == key) {
        return {&s.value, false};
      }
    }
  }

  bool erase(std::string_view key) {
    if (slots_.empty()) return false;
    uint64_t h = hashOf(key);
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.state == kEmpty) return false;
      if (s.state == kFull && s.hash == h && std::string_view(s.key) == key) {
        s.state = kDeleted;  // a tombstone keeps later probes going
        s.key = Key();
        s.value = Value();
        --size_;
        return true;
      }
    }
  }

  void reserve(size_t n) {
    if (n * 4 > slots_.size() * 3) grow(n);
  }

  template <typename Fn>
  void forEach(Fn&& fn) const {
    for (const Slot& s : slots_)
      if (s.state == kFull) fn(std::string_view(s.key), s.value);
  }

 private:
  enum : uint8_t { kEmpty = 0, kFull = 1, kDeleted = 2 };
  struct Slot {
    uint64_t hash = 0;
    Key key{};
    Value value{};
    uint8_t state = kEmpty;
  };

  static uint64_t hashOf(std::string_view key) { return std::hash<std::string_view>{}(key); }
  size_t mask() const { return slots_.size() - 1; }

  // Rebuilds with room for `n` live entries (load factor at most 3/4), dropping tombstones.
  void grow(size_t n) {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(flat_detail::capacityFor(n, old.size(), used_ == size_));
    used_ = size_;
    for (Slot& s : old) {
      if (s.state != kFull) continue;
      for (size_t i = s.hash & mask();; i = (i + 1) & mask()) {
        if (slots_[i].state == kEmpty) {
          slots_[i] = std::move(s);
          break;
        }
      }
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;  // live entries
  size_t used_ = 0;  // live entries and tombstones
};

// A set of items found by a name each item holds (KeyOf(item) gives it as a
// string_view), open addressing in 8-byte slots: the item's address in the low
// 48 bits (every user-space address on x86-64 and AArch64 Linux fits) and 16
// bits of the name's hash above it. A probe reads the name through the item
// only on a tag match (a false one 1 time in 65536); a rehash reads every
// name again. Where a FlatStringMap<string_view, T*> keeps a copy of the view
// too, this is 40 -> 8 bytes per slot.
template <typename T, typename KeyOf>
class FlatIndex {
 public:
  size_t size() const { return size_; }

  T* find(std::string_view key) const {
    if (slots_.empty()) return nullptr;
    const uint64_t h = hashOf(key), tag = tagOf(h);
    for (size_t i = startOf(h);; i = nextOf(i)) {
      const uint64_t s = slots_[i];
      if (s == kEmpty) return nullptr;
      if ((s & kTagMask) == tag && s != kDeleted && KeyOf{}(itemOf(s)) == key) return itemOf(s);
    }
  }

  // Inserts unless an item with the same name is there; returns whether it was inserted.
  bool insert(T* item) {
    const auto address = reinterpret_cast<uintptr_t>(item);
    if (address >> kTagShift) throw std::length_error("FlatIndex: an address above 48 bits cannot be indexed");
    if ((used_ + 1) * 4 > slots_.size() * 3) grow(flat_detail::roomForOneMore(size_, used_));
    std::string_view key = KeyOf{}(item);
    const uint64_t h = hashOf(key), tag = tagOf(h);
    uint64_t* reuse = nullptr;
    for (size_t i = startOf(h);; i = nextOf(i)) {
      uint64_t& s = slots_[i];
      if (s == kEmpty) {
        uint64_t* target = reuse ? reuse : &s;
        if (!reuse) ++used_;
        *target = tag | address;
        ++size_;
        return true;
      }
      if (s == kDeleted) {
        if (!reuse) reuse = &s;
      } else if ((s & kTagMask) == tag && KeyOf{}(itemOf(s)) == key) {
        return false;
      }
    }
  }

  bool erase(std::string_view key) {
    if (slots_.empty()) return false;
    const uint64_t h = hashOf(key), tag = tagOf(h);
    for (size_t i = startOf(h);; i = nextOf(i)) {
      uint64_t& s = slots_[i];
      if (s == kEmpty) return false;
      if ((s & kTagMask) == tag && s != kDeleted && KeyOf{}(itemOf(s)) == key) {
        s = kDeleted;  // a tombstone keeps later probes going
        --size_;
        if (flat_detail::sparse(size_, slots_.size())) rehash(flat_detail::shrunkCapacity(size_));
        return true;
      }
    }
  }

  void reserve(size_t n) {
    if (n * 4 > slots_.size() * 3) grow(n);
  }
  size_t capacity() const { return slots_.size(); }

 private:
  // A live slot's address is never 0 or 1 (items are aligned objects).
  static constexpr uint64_t kEmpty = 0, kDeleted = 1;
  static constexpr int kTagShift = 48;
  static constexpr uint64_t kTagMask = ~uint64_t{0} << kTagShift;
  static uint64_t hashOf(std::string_view key) { return std::hash<std::string_view>{}(key); }
  // The hash's top 16 bits: the probe start uses its low 48.
  static uint64_t tagOf(uint64_t h) { return h & kTagMask; }
  size_t startOf(uint64_t h) const { return flat_detail::slotOf(h & ~kTagMask, slots_.size()); }
  size_t nextOf(size_t i) const { return i + 1 == slots_.size() ? 0 : i + 1; }
  static T* itemOf(uint64_t s) { return reinterpret_cast<T*>(s & ~kTagMask); }

  // Rebuilds with room for `n` live entries (load factor at most 3/4), dropping tombstones.
  void grow(size_t n) { rehash(flat_detail::exactCapacityFor(n, slots_.size())); }
  void rehash(size_t capacity) {
    std::vector<uint64_t> old(capacity, kEmpty);
    old.swap(slots_);
    used_ = size_;
    for (const uint64_t s : old) {
      if (s == kEmpty || s == kDeleted) continue;
      for (size_t i = startOf(hashOf(KeyOf{}(itemOf(s))));; i = nextOf(i))
        if (slots_[i] == kEmpty) {
          slots_[i] = s;
          break;
        }
    }
  }

  std::vector<uint64_t> slots_;  // tag | address; kEmpty, kDeleted
  size_t size_ = 0;  // live entries
  size_t used_ = 0;  // live entries and tombstones
};

// A counted multiset of name hashes, open addressing in 8-byte slots: 48 bits
// of the hash and a 16-bit count. Keys equal in their low 48 bits are one key,
// and 0 is stored as 1 (0 marks an empty slot): for hashes, that is one more
// collision. A count that reaches 65535 stays there (removals no longer lower
// it), so a key held that often is never reported free.
class FlatHashCounter {
 public:
  size_t size() const { return size_; }
  uint32_t count(uint64_t key) const {
    if (slots_.empty()) return 0;
    key = keyOf(key);
    for (size_t i = startOf(key);; i = nextOf(i)) {
      const uint64_t s = slots_[i];
      if (s == 0) return 0;
      if ((s >> 16) == key) return s & kMaxCount;
    }
  }
  // Adds one; returns the count before.
  uint32_t add(uint64_t key) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow(flat_detail::roomForOneMore(size_, used_));
    key = keyOf(key);
    for (size_t i = startOf(key);; i = nextOf(i)) {
      uint64_t& s = slots_[i];
      if (s == 0) {
        s = key << 16 | 1;
        ++size_;
        ++used_;
        return 0;
      }
      if ((s >> 16) == key) {
        const uint32_t before = s & kMaxCount;
        if (before == 0) ++size_;  // a key kept at count 0 comes back
        if (before < kMaxCount) ++s;
        return before;
      }
    }
  }
  // Removes one; a key whose count reaches 0 keeps its slot (at 0) until the next rebuild.
  void remove(uint64_t key) {
    if (slots_.empty()) return;
    key = keyOf(key);
    for (size_t i = startOf(key);; i = nextOf(i)) {
      uint64_t& s = slots_[i];
      if (s == 0) return;
      if ((s >> 16) == key) {
        const uint32_t n = s & kMaxCount;
        if (n == 0 || n == kMaxCount) return;  // absent, or held for good
        --s;
        if (n == 1) {
          --size_;
          if (flat_detail::sparse(size_, slots_.size())) rehash(flat_detail::shrunkCapacity(size_));
        }
        return;
      }
    }
  }
  void reserve(size_t n) {
    if (n * 4 > slots_.size() * 3) grow(n);
  }
  size_t capacity() const { return slots_.size(); }

 private:
  static constexpr uint64_t kMaxCount = 0xffff;
  static uint64_t keyOf(uint64_t key) {
    key &= (uint64_t{1} << 48) - 1;
    return key ? key : 1;
  }
  size_t startOf(uint64_t key) const { return flat_detail::slotOf(key, slots_.size()); }
  size_t nextOf(size_t i) const { return i + 1 == slots_.size() ? 0 : i + 1; }
  // Room for `n` live keys (load factor at most 3/4), keys at count 0 dropped.
  void grow(size_t n) { rehash(flat_detail::exactCapacityFor(n, slots_.size())); }
  // Rebuilds at `capacity` slots (room for every live key), dropping keys at count 0.
  void rehash(size_t capacity) {
    std::vector<uint64_t> old;
    old.swap(slots_);
    slots_.resize(capacity);
    used_ = 0;
    for (const uint64_t s : old) {
      if (s == 0 || (s & kMaxCount) == 0) continue;
      for (size_t i = startOf(s >> 16);; i = nextOf(i))
        if (slots_[i] == 0) {
          slots_[i] = s;
          ++used_;
          break;
        }
    }
  }
  std::vector<uint64_t> slots_;  // key << 16 | count; 0 is empty
  size_t size_ = 0;  // keys with a count above 0
  size_t used_ = 0;  // occupied slots
};

}  // namespace graphrw
