// Blocks of one size for the IR's most numerous objects (nodes and values),
// carved from 256 KiB slabs without the allocator's 8-byte header per block:
// a million-node graph's nodes and values then take 16 MB less. A freed block
// goes on the pool's free list for the next object of its size; slabs are kept
// for the process's life (the next pass or model reuses them).
// One pool per block size, shared by every thread under a mutex: a batch runs
// models on worker threads. Under AddressSanitizer the blocks come from
// operator new one by one, so a use after free is still caught.
#pragma once

#include <cstddef>
#include <mutex>
#include <new>

#if defined(__SANITIZE_ADDRESS__)
#define GRAPHRW_FIXED_POOL_OFF 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GRAPHRW_FIXED_POOL_OFF 1
#endif
#endif

namespace graphrw {

template <size_t Size>
class FixedPool {
  static_assert(Size >= sizeof(void*) && Size % alignof(void*) == 0, "a block holds the free list's link");

 public:
  static constexpr size_t kSlabBytes = 256 * 1024;
  static constexpr size_t kBlocksPerSlab = kSlabBytes / Size;

  static void* allocate() {
#ifdef GRAPHRW_FIXED_POOL_OFF
    return ::operator new(Size);
#else
    FixedPool& p = instance();
    std::lock_guard lock(p.mutex_);
    if (!p.free_) p.refill();
    Link* b = p.free_;
    p.free_ = b->next;
    return b;
#endif
  }

  static void deallocate(void* block) noexcept {
    if (!block) return;
#ifdef GRAPHRW_FIXED_POOL_OFF
    ::operator delete(block);
#else
    if (holds() > 0) {  // kept from reuse until the thread's last Hold ends
      held() = new (block) Link{held()};
      return;
    }
    FixedPool& p = instance();
    std::lock_guard lock(p.mutex_);
    p.free_ = new (block) Link{p.free_};
#endif
  }

  // While a thread holds a Hold, the blocks it frees are not handed out again
  // until its last Hold ends: an object that outlived a stretch of work is then
  // never confused with a new one at its address (--verify-each compares nodes
  // by address across a pass). Without the pool (sanitizers) the allocator's
  // own quarantine does this.
  class Hold {
   public:
    Hold() { ++holds(); }
    ~Hold() {
      if (--holds() == 0) release();
    }
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;
  };

 private:
  struct Link {
    Link* next;
  };
  static int& holds() {
    static thread_local int depth = 0;
    return depth;
  }
  static Link*& held() {
    static thread_local Link* list = nullptr;
    return list;
  }
  // The thread's held blocks go back on the shared free list.
  static void release() noexcept {
    Link* list = held();
    held() = nullptr;
    if (!list) return;
    FixedPool& p = instance();
    std::lock_guard lock(p.mutex_);
    while (list) {
      Link* next = list->next;
      p.free_ = new (list) Link{p.free_};
      list = next;
    }
  }
  // Never destroyed: objects may be freed during static destruction.
  static FixedPool& instance() {
    static FixedPool* pool = new FixedPool;
    return *pool;
  }
  // Threads the slab's blocks onto the free list, lowest address first out.
  void refill() {
    char* slab = static_cast<char*>(::operator new(kBlocksPerSlab* Size));
    for (size_t i = kBlocksPerSlab; i-- > 0;) free_ = new (slab + i * Size) Link{free_};
  }
  std::mutex mutex_;
  Link* free_ = nullptr;
};

}  // namespace graphrw
