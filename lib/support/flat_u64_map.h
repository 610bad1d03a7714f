// A map from nonzero 64-bit keys (packed pointers and small indices) to small
// values, open addressing (linear probing) in one array; it only grows, or
// empties with clear(). Where
// std::unordered_map costs a heap node (48 bytes with the allocator's header)
// and a bucket per entry, this costs 16 bytes a slot at up to 3/4 load: the
// memo tables a matcher keeps for every node of a million-node graph.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/flat_map.h"

namespace graphrw {

template <typename V>
class FlatU64Map {
 public:
  size_t size() const { return size_; }

  // The value at `key` (nonzero), or null.
  const V* find(uint64_t key) const {
    if (slots_.empty()) return nullptr;
    for (size_t i = hashOf(key) & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

  // The value at `key` (nonzero), value-initialised when new. Valid until the next insert.
  V& operator[](uint64_t key) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(flat_detail::capacityFor(size_ + 1, slots_.size(), true));
    for (size_t i = hashOf(key) & mask();; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == kEmpty) {
        s.key = key;
        s.value = V{};
        ++size_;
        return s.value;
      }
    }
  }

  // Empties the map. A table far larger than what it held (over 64 slots, under
  // 1/8 full) is let go, so clearing after each small use costs what was used.
  void clear() {
    if (slots_.size() > 64 && size_ * 8 < slots_.size())
      std::vector<Slot>().swap(slots_);
    else
      std::fill(slots_.begin(), slots_.end(), Slot{});
    size_ = 0;
  }
  size_t capacity() const { return slots_.size(); }

 private:
  static constexpr uint64_t kEmpty = 0;
  struct Slot {
    uint64_t key = kEmpty;
    V value{};
  };
  // Packed pointers share their low and high bits: mixed before probing.
  static uint64_t hashOf(uint64_t x) { return flat_detail::mix64(x); }
  size_t mask() const { return slots_.size() - 1; }
  void rehash(size_t capacity) {
    std::vector<Slot> old(capacity);
    old.swap(slots_);
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      for (size_t i = hashOf(s.key) & mask();; i = (i + 1) & mask())
        if (slots_[i].key == kEmpty) {
          slots_[i] = s;
          break;
        }
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};

}  // namespace graphrw
