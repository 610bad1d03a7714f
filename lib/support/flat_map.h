// A string-keyed hash map with open addressing (linear probing) in one array.
// Each slot keeps the key's hash, so a lookup usually costs one cache miss,
// where std::unordered_map costs a bucket, a node and the key's heap string:
// this is what keeps name lookups linear at millions of names.
// Key is std::string (owned keys) or std::string_view (keys owned elsewhere,
// which must outlive their entry).
#pragma once

#include <cstdint>
#include <algorithm>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace graphrw {

template <typename Key, typename Value>
class FlatStringMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  Value* find(std::string_view key) {
    if (slots_.empty()) return nullptr;
    uint64_t h = hashOf(key);
    for (size_t i = h & mask(); ; i = (i + 1) & mask()) {
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
    for (size_t i = h & mask(); ; i = (i + 1) & mask()) {
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
    for (size_t i = h & mask(); ; i = (i + 1) & mask()) {
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
    size_t capacity = 16;
    while (capacity * 3 < n * 4 + 4) capacity *= 2;
    if (capacity < slots_.size()) capacity = slots_.size();
    if (capacity == slots_.size() && used_ == size_ && !slots_.empty()) capacity *= 2;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(capacity);
    used_ = size_;
    for (Slot& s : old) {
      if (s.state != kFull) continue;
      for (size_t i = s.hash & mask(); ; i = (i + 1) & mask()) {
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

// A counted multiset of 64-bit keys (name hashes), open addressing in 16-byte
// slots. Key 0 is stored as 1 (0 marks an empty slot), so 0 and 1 count as one
// key: harmless for hashes, where it is one more collision.
class FlatHashCounter {
 public:
  size_t size() const { return size_; }
  uint32_t count(uint64_t key) const {
    if (slots_.empty()) return 0;
    key = key ? key : 1;
    for (size_t i = key & mask(); ; i = (i + 1) & mask()) {
      const Slot& s = slots_[i];
      if (s.key == 0) return 0;
      if (s.key == key) return s.count;
    }
  }
  // Adds one; returns the count before.
  uint32_t add(uint64_t key) {
    if ((used_ + 1) * 4 > slots_.size() * 3) grow(size_ + 1);
    key = key ? key : 1;
    for (size_t i = key & mask(); ; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.key == 0) {
        s.key = key;
        s.count = 1;
        ++size_;
        ++used_;
        return 0;
      }
      if (s.key == key) {
        if (s.count == 0) ++size_;  // a key kept at count 0 comes back
        return s.count++;
      }
    }
  }
  // Removes one; a key whose count reaches 0 keeps its slot (at 0) until the next rebuild.
  void remove(uint64_t key) {
    if (slots_.empty()) return;
    key = key ? key : 1;
    for (size_t i = key & mask(); ; i = (i + 1) & mask()) {
      Slot& s = slots_[i];
      if (s.key == 0) return;
      if (s.key == key) {
        if (s.count > 0 && --s.count == 0) --size_;
        return;
      }
    }
  }
  void reserve(size_t n) {
    if (n * 4 > slots_.size() * 3) grow(n);
  }

 private:
  struct Slot {
    uint64_t key = 0;
    uint32_t count = 0;
  };
  size_t mask() const { return slots_.size() - 1; }
  void grow(size_t n) {
    size_t capacity = 16;
    while (capacity * 3 < n * 4 + 4) capacity *= 2;
    if (capacity <= slots_.size() && used_ == size_) capacity = slots_.size() * 2;
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.resize(std::max(capacity, old.size()));
    used_ = 0;
    for (const Slot& s : old) {
      if (s.key == 0 || s.count == 0) continue;
      for (size_t i = s.key & mask(); ; i = (i + 1) & mask())
        if (slots_[i].key == 0) {
          slots_[i] = s;
          ++used_;
          break;
        }
    }
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;  // keys with a count above 0
  size_t used_ = 0;  // occupied slots
};

}  // namespace graphrw
