// A vector of trivially copyable elements that keeps up to N of them inside
// itself, in the 24 bytes std::vector spends on its three pointers.
//
// A node's inputs and outputs and a value's uses are short: one or two
// entries for nearly every node an exporter writes. As std::vectors each one
// cost a heap block (32 bytes with the allocator's header) on top of the
// vector itself; at a million nodes that was a fifth of the graph's memory.
// LLVM's SmallVector and boost::container::small_vector keep a pointer, a
// size and a capacity beside the inline room (40 bytes for two pointers); here
// the inline room and the heap pointer share a union, and the capacity tells
// which one is live (inline exactly when it equals N), so two pointers or one
// 16-byte Use fit in 24 bytes.
//
// It converts to std::vector<T> (a copy) so code that wants a std::vector, or
// copies the list before editing it, reads as before.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace graphrw {

template <typename T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector copies its elements with memcpy");
  static_assert(N >= 1 && N * sizeof(T) >= sizeof(T*), "the inline room must hold the heap pointer");

 public:
  using value_type = T;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T&;
  using const_reference = const T&;
  using pointer = T*;
  using const_pointer = const T*;
  using iterator = T*;
  using const_iterator = const T*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  SmallVector() noexcept {}
  SmallVector(std::initializer_list<T> items) { assign(items.begin(), items.end()); }
  SmallVector(const std::vector<T>& items) { assign(items.data(), items.data() + items.size()); }  // NOLINT: as vector
  SmallVector(const SmallVector& other) { assign(other.begin(), other.end()); }
  SmallVector(SmallVector&& other) noexcept { steal(other); }
  ~SmallVector() { release(); }

  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) assign(other.begin(), other.end());
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      steal(other);
    }
    return *this;
  }
  SmallVector& operator=(const std::vector<T>& items) {
    assign(items.data(), items.data() + items.size());
    return *this;
  }

  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT: a copy, as before

  T* data() noexcept { return isInline() ? inline_ : heap_; }
  const T* data() const noexcept { return isInline() ? inline_ : heap_; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  const_iterator cbegin() const noexcept { return begin(); }
  const_iterator cend() const noexcept { return end(); }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }

  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return capacity_; }

  T& operator[](size_t i) noexcept { return data()[i]; }
  const T& operator[](size_t i) const noexcept { return data()[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data()[i];
  }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data()[i];
  }
  T& front() noexcept { return data()[0]; }
  const T& front() const noexcept { return data()[0]; }
  T& back() noexcept { return data()[size_ - 1]; }
  const T& back() const noexcept { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) grow(n);
  }
  void push_back(const T& item) {
    if (size_ == capacity_) {
      T copy = item;  // `item` may live in this vector's storage
      grow(size_ + 1);
      data()[size_++] = copy;
      return;
    }
    data()[size_++] = item;
  }
  template <typename... Args>
  T& emplace_back(Args&&... args) {
    push_back(T{std::forward<Args>(args)...});
    return back();
  }
  void pop_back() noexcept { --size_; }
  void clear() noexcept { size_ = 0; }
  void resize(size_t n, const T& fill = T{}) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = fill;
    size_ = static_cast<uint32_t>(n);
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    T* base = data();
    auto from = static_cast<size_t>(first - base), to = static_cast<size_t>(last - base);
    std::memmove(base + from, base + to, (size_ - to) * sizeof(T));
    size_ -= static_cast<uint32_t>(to - from);
    return base + from;
  }
  iterator insert(const_iterator pos, const T& item) {
    auto at = static_cast<size_t>(pos - data());
    push_back(item);
    std::rotate(begin() + at, end() - 1, end());
    return begin() + at;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  bool isInline() const noexcept { return capacity_ == N; }

  void assign(const T* first, const T* last) {
    auto n = static_cast<size_t>(last - first);
    if (n > capacity_) {
      release();
      heap_ = allocate(n);
      capacity_ = static_cast<uint32_t>(n);
    }
    if (n) std::memmove(data(), first, n * sizeof(T));
    size_ = static_cast<uint32_t>(n);
  }

  void grow(size_t atLeast) {
    if (atLeast > UINT32_MAX) throw std::length_error("SmallVector: more than 2^32 elements");
    size_t next = std::max<size_t>(atLeast, size_t{capacity_} * 2);
    if (next > UINT32_MAX) next = UINT32_MAX;
    T* fresh;
    if (isInline()) {
      fresh = allocate(next);
      std::memcpy(fresh, inline_, size_ * sizeof(T));
    } else {
      fresh = static_cast<T*>(std::realloc(heap_, next * sizeof(T)));
      if (!fresh) throw std::bad_alloc();
    }
    heap_ = fresh;
    capacity_ = static_cast<uint32_t>(next);
  }

  static T* allocate(size_t n) {
    auto* p = static_cast<T*>(std::malloc(n * sizeof(T)));
    if (!p) throw std::bad_alloc();
    return p;
  }

  void release() noexcept {
    if (!isInline()) std::free(heap_);
    capacity_ = N;
    size_ = 0;
  }

  void steal(SmallVector& other) noexcept {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.isInline())
      std::memcpy(inline_, other.inline_, size_ * sizeof(T));
    else
      heap_ = other.heap_;
    other.capacity_ = N;
    other.size_ = 0;
  }

  union {
    T inline_[N];
    T* heap_;
  };
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
};

}  // namespace graphrw
