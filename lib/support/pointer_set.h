// A set of pointers with open addressing (linear probing) in one array of
// 8-byte slots that hold the pointers themselves. std::unordered_set<T*> costs
// a 32-byte heap node per element plus its bucket (about 44 bytes at a
// million); this costs 11-14 bytes and no allocation per insert. Any slot
// count (range reduction, flat_detail::slotOf, as FlatIndex): reserved for a
// million nodes, 1.33M slots (10.7 MB), not the next power of two's 2M (16.8 MB).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "support/flat_map.h"

namespace graphrw {

template <typename T>
class FlatPointerSet {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  bool contains(const T* item) const {
    if (slots_.empty()) return false;
    const uintptr_t key = keyOf(item);
    for (size_t i = startOf(key);; i = nextOf(i)) {
      if (slots_[i] == key) return true;
      if (slots_[i] == kEmpty) return false;
    }
  }

  // Returns whether `item` was not there before.
  bool insert(const T* item) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow(flat_detail::roomForOneMore(size_, used_));
    const uintptr_t key = keyOf(item);
    uintptr_t* reuse = nullptr;
    for (size_t i = startOf(key);; i = nextOf(i)) {
      uintptr_t& s = slots_[i];
      if (s == key) return false;
      if (s == kDeleted && !reuse) reuse = &s;
      if (s == kEmpty) {
        if (reuse)
          *reuse = key;
        else {
          s = key;
          ++used_;
        }
        ++size_;
        return true;
      }
    }
  }

  // Returns whether `item` was there.
  bool erase(const T* item) {
    if (slots_.empty()) return false;
    const uintptr_t key = keyOf(item);
    for (size_t i = startOf(key);; i = nextOf(i)) {
      uintptr_t& s = slots_[i];
      if (s == kEmpty) return false;
      if (s == key) {
        s = kDeleted;  // a tombstone keeps later probes going
        --size_;
        if (flat_detail::sparse(size_, slots_.size())) rehash(flat_detail::shrunkCapacity(size_));
        return true;
      }
    }
  }

  // Empties the set; a small table keeps its slots for the next use.
  void clear() {
    if (slots_.size() <= 64)
      std::fill(slots_.begin(), slots_.end(), kEmpty);
    else
      std::vector<uintptr_t>().swap(slots_);
    size_ = used_ = 0;
  }
  size_t capacity() const { return slots_.size(); }
  // Room for `n` entries without growing (a set about to take many: no old
  // table beside the new one at each doubling).
  void reserve(size_t n) {
    if (n * 4 > slots_.size() * 3) grow(n);
  }

 private:
  // Objects are aligned, so no pointer to one is 1; null is stored as 2.
  static constexpr uintptr_t kEmpty = 0, kDeleted = 1;
  static uintptr_t keyOf(const T* item) {
    auto key = reinterpret_cast<uintptr_t>(item);
    return key == kEmpty ? 2 : key;
  }
  // Heap addresses share their low bits (alignment) and high bits: mixed so
  // linear probing starts anywhere.
  size_t startOf(uint64_t key) const { return flat_detail::slotOf(flat_detail::mix64(key) >> 16, slots_.size()); }
  size_t nextOf(size_t i) const { return i + 1 == slots_.size() ? 0 : i + 1; }
  void grow(size_t n) { rehash(flat_detail::exactCapacityFor(n, slots_.size())); }
  void rehash(size_t capacity) {
    std::vector<uintptr_t> old(capacity, kEmpty);
    old.swap(slots_);
    used_ = size_;
    for (const uintptr_t key : old) {
      if (key == kEmpty || key == kDeleted) continue;
      for (size_t i = startOf(key);; i = nextOf(i))
        if (slots_[i] == kEmpty) {
          slots_[i] = key;
          break;
        }
    }
  }

  std::vector<uintptr_t> slots_;
  size_t size_ = 0;  // live entries
  size_t used_ = 0;  // live entries and tombstones
};

}  // namespace graphrw
