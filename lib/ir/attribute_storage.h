// How a node holds its attributes, in as few bytes as the IR's million-node
// graphs call for (see Attribute in ir.h):
// - SharedAttributeProto: an immutable AttributeProto shared by reference
//   count kept beside it, 8 bytes per holder where std::shared_ptr takes 16.
// - InlineOneVector: the node's list, which keeps one element inside itself
//   (most nodes carry none or one attribute: a Transpose's perm, a placement
//   key) and only a longer list in a heap block: 24 bytes, as std::vector.
//   A block of two (a pipeline stage and an IPU on every node) comes from a
//   pool of exactly that size (support/fixed_pool.h): no allocator header,
//   32 bytes where malloc takes 48.
#pragma once

#include <onnx/onnx_pb.h>

#include <atomic>
#include <cstdint>
#include <new>
#include <utility>

#include "support/fixed_pool.h"

namespace graphrw::ir {

class SharedAttributeProto {
 public:
  SharedAttributeProto() noexcept = default;
  explicit SharedAttributeProto(onnx::AttributeProto proto) : block_(new Block(std::move(proto))) {}
  SharedAttributeProto(const SharedAttributeProto& other) noexcept : block_(other.block_) {
    if (block_) block_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedAttributeProto(SharedAttributeProto&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  SharedAttributeProto& operator=(SharedAttributeProto other) noexcept {
    std::swap(block_, other.block_);
    return *this;
  }
  ~SharedAttributeProto() {
    if (block_ && block_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete block_;
  }

  explicit operator bool() const { return block_ != nullptr; }
  const onnx::AttributeProto& operator*() const { return block_->proto; }
  // Held by more than this one holder: not to be changed in place.
  bool shared() const { return block_ && block_->refs.load(std::memory_order_acquire) > 1; }
  // Only while !shared().
  onnx::AttributeProto& mutableRef() { return block_->proto; }

 private:
  struct Block {
    explicit Block(onnx::AttributeProto p) : proto(std::move(p)) {}
    std::atomic<uint32_t> refs{1};
    onnx::AttributeProto proto;
  };
  Block* block_ = nullptr;
};

// A vector of movable elements holding the first one in place; a second moves
// them all into a heap block, which the list then keeps (no shrinking back).
template <typename T>
class InlineOneVector {
  static_assert(sizeof(T) >= sizeof(T*), "the inline element must hold the heap pointer");

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  InlineOneVector() noexcept {}
  InlineOneVector(const InlineOneVector&) = delete;
  InlineOneVector& operator=(const InlineOneVector&) = delete;
  InlineOneVector(InlineOneVector&& other) noexcept { steal(other); }
  InlineOneVector& operator=(InlineOneVector&& other) noexcept {
    if (this != &other) {
      release();
      steal(other);
    }
    return *this;
  }
  ~InlineOneVector() { release(); }

  T* data() noexcept { return isInline() ? &one_ : heap_; }
  const T* data() const noexcept { return isInline() ? &one_ : heap_; }
  iterator begin() noexcept { return data(); }
  iterator end() noexcept { return data() + size_; }
  const_iterator begin() const noexcept { return data(); }
  const_iterator end() const noexcept { return data() + size_; }
  size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  size_t capacity() const noexcept { return capacity_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }

  void reserve(size_t n) {
    if (n > capacity_) moveTo(n);
  }
  void push_back(T&& value) {
    if (size_ == capacity_) moveTo(size_t{capacity_} * 2);
    new (data() + size_) T(std::move(value));
    ++size_;
  }
  // Removes the element at `pos`, moving the later ones down; returns what follows it.
  iterator erase(const_iterator pos) {
    T* p = data() + (pos - data());
    for (T* q = p; q + 1 != end(); ++q) *q = std::move(q[1]);
    back().~T();
    --size_;
    return p;
  }
  void clear() noexcept {
    for (T& x : *this) x.~T();
    size_ = 0;
  }

 private:
  bool isInline() const noexcept { return capacity_ == 1; }
  // Moves the elements into a heap block of `n` (n > 1).
  void moveTo(size_t n) {
    T* block = static_cast<T*>(n == 2 ? PairPool::allocate() : ::operator new(n * sizeof(T)));
    T* old = data();
    for (uint32_t i = 0; i < size_; ++i) {
      new (block + i) T(std::move(old[i]));
      old[i].~T();
    }
    freeHeap();
    heap_ = block;
    capacity_ = static_cast<uint32_t>(n);
  }
  using PairPool = FixedPool<2 * sizeof(T)>;
  void freeHeap() noexcept {
    if (capacity_ == 2)
      PairPool::deallocate(heap_);
    else if (!isInline())
      ::operator delete(heap_);
  }
  void release() noexcept {
    clear();
    freeHeap();
    capacity_ = 1;
  }
  // Takes other's elements; other is left empty and inline.
  void steal(InlineOneVector& other) noexcept {
    if (other.isInline()) {
      if (other.size_) {
        new (&one_) T(std::move(other.one_));
        other.one_.~T();
      }
    } else {
      heap_ = other.heap_;
    }
    size_ = other.size_;
    capacity_ = other.capacity_;
    other.size_ = 0;
    other.capacity_ = 1;
  }

  union {
    T one_;  // while capacity_ is 1 (constructed when size_ is 1)
    T* heap_;  // otherwise
  };
  uint32_t size_ = 0;
  uint32_t capacity_ = 1;
};

}  // namespace graphrw::ir
