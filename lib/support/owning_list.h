// A doubly linked list whose links live in its elements: each element owns
// the next one (std::unique_ptr<T> next_) and points back at the previous one
// (T* prev_), and the list owns the first.
//
// std::list<std::unique_ptr<Node>> cost a graph, per node, a 24-byte cell (a
// 32-byte heap block) and the iterator each node kept to find its own place:
// 40 bytes, against the 16 of two links. Its interface is kept: iterating
// yields `const std::unique_ptr<T>&` (the owning pointer in the previous
// element, or the list's head), iterators stay valid until their element is
// erased, and splice moves an element between lists without touching it.
// T declares `template <typename> friend class OwningList;` and the two links.
#pragma once

#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>

namespace graphrw {

template <typename T>
class OwningList {
 public:
  class iterator {
   public:
    using iterator_category = std::bidirectional_iterator_tag;
    using value_type = std::unique_ptr<T>;
    using difference_type = std::ptrdiff_t;
    using reference = const std::unique_ptr<T>&;
    using pointer = const std::unique_ptr<T>*;

    iterator() = default;
    reference operator*() const { return list_->owner(node_); }
    pointer operator->() const { return &list_->owner(node_); }
    iterator& operator++() {
      node_ = node_->next_.get();
      return *this;
    }
    iterator operator++(int) {
      iterator was = *this;
      ++*this;
      return was;
    }
    iterator& operator--() {
      node_ = node_ ? node_->prev_ : list_->tail_;
      return *this;
    }
    iterator operator--(int) {
      iterator was = *this;
      --*this;
      return was;
    }
    bool operator==(const iterator& o) const { return node_ == o.node_ && list_ == o.list_; }

   private:
    friend class OwningList;
    iterator(const OwningList* list, T* node) : list_(list), node_(node) {}
    const OwningList* list_ = nullptr;
    T* node_ = nullptr;  // nullptr: end()
  };
  using const_iterator = iterator;

  OwningList() = default;
  OwningList(const OwningList&) = delete;
  OwningList& operator=(const OwningList&) = delete;
  ~OwningList() { clear(); }

  iterator begin() const { return {this, head_.get()}; }
  iterator end() const { return {this, nullptr}; }
  // Where `element` (which must be in this list) stands.
  iterator at(const T* element) const { return {this, const_cast<T*>(element)}; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const std::unique_ptr<T>& front() const { return head_; }
  const std::unique_ptr<T>& back() const { return owner(tail_); }

  iterator insert(iterator before, std::unique_ptr<T> element) {
    T* raw = element.get();
    T* next = before.node_;
    T* prev = next ? next->prev_ : tail_;
    std::unique_ptr<T>& slot = prev ? prev->next_ : head_;
    raw->prev_ = prev;
    raw->next_ = std::move(slot);
    slot = std::move(element);
    if (next)
      next->prev_ = raw;
    else
      tail_ = raw;
    ++size_;
    return {this, raw};
  }

  // Unlinks the element at `it` and hands it over.
  std::unique_ptr<T> take(iterator it) {
    T* raw = it.node_;
    std::unique_ptr<T>& slot = owner(raw);
    std::unique_ptr<T> taken = std::move(slot);
    slot = std::move(raw->next_);
    if (slot)
      slot->prev_ = raw->prev_;
    else
      tail_ = raw->prev_;
    raw->prev_ = nullptr;
    --size_;
    return taken;
  }

  iterator erase(iterator it) {
    T* next = it.node_->next_.get();
    take(it);
    return {this, next};
  }

  // Moves the element at `it` of `from` (this list or another) before `pos`.
  void splice(iterator pos, OwningList& from, iterator it) {
    if (&from == this && pos.node_ == it.node_) return;
    insert(pos, from.take(it));
  }

  void swap(OwningList& other) noexcept {
    std::swap(head_, other.head_);
    std::swap(tail_, other.tail_);
    std::swap(size_, other.size_);
  }

  // Front to back, one element at a time: a million-long chain of owners must
  // not be destroyed recursively.
  void clear() {
    std::unique_ptr<T> element = std::move(head_);
    while (element) element = std::move(element->next_);
    tail_ = nullptr;
    size_ = 0;
  }

 private:
  std::unique_ptr<T>& owner(T* element) const { return element->prev_ ? element->prev_->next_ : head_; }

  mutable std::unique_ptr<T> head_;  // mutable: owner() hands out the slot of a const list's element
  T* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace graphrw
