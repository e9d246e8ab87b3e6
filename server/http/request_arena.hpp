// A per-session bump allocator for the request parser's header fields, so parsing a request
// allocates nothing.
#pragma once

#include <cstddef>
#include <new>

namespace knit_server {

// Beast's fields container allocates one node per header field, plus a buffer for the
// method and target: two or more malloc/free pairs per request, even for GET /ping. The
// session gives its parser this arena instead (the idea of fields_alloc in Beast's
// "fast" example): allocations bump a pointer through a block that lives in the session,
// and the block is reused once everything in it has been freed, which happens when the
// session replaces the parser for the next request. A request whose header does not fit
// takes the rest from the heap, as before.
//
// Host thread only, like the session that owns it.
class request_arena {
 public:
  // Room for a typical header (a dozen fields); a larger one spills to the heap.
  static constexpr std::size_t kSize = 2048;

  request_arena() = default;
  request_arena(const request_arena&) = delete;
  request_arena& operator=(const request_arena&) = delete;

  void* allocate(std::size_t bytes, std::size_t align) {
    const std::size_t at = (used_ + align - 1) & ~(align - 1);
    if (align > alignof(std::max_align_t) || at + bytes > kSize) return ::operator new(bytes);
    used_ = at + bytes;
    ++live_;
    return storage_ + at;
  }

  void deallocate(void* p) noexcept {
    if (!owns(p)) return ::operator delete(p);
    // The last allocation in the block is gone: start again from the beginning.
    if (--live_ == 0) used_ = 0;
  }

 private:
  bool owns(const void* p) const noexcept {
    const auto* b = static_cast<const unsigned char*>(p);
    return b >= storage_ && b < storage_ + kSize;
  }

  alignas(std::max_align_t) unsigned char storage_[kSize];
  std::size_t used_ = 0;  // bytes handed out since the block was last empty
  std::size_t live_ = 0;  // allocations from the block not yet freed
};

// The standard Allocator face of a request_arena, for http::basic_fields. Copies share the
// arena; the arena must outlive every container using it.
template <class T>
class arena_allocator {
 public:
  using value_type = T;

  explicit arena_allocator(request_arena& arena) noexcept : arena_(&arena) {}
  template <class U>
  arena_allocator(const arena_allocator<U>& other) noexcept : arena_(other.arena_) {}

  T* allocate(std::size_t n) {
    return static_cast<T*>(arena_->allocate(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t) noexcept { arena_->deallocate(p); }

  template <class U>
  friend bool operator==(const arena_allocator& a, const arena_allocator<U>& b) noexcept {
    return a.arena_ == b.arena_;
  }

 private:
  template <class U>
  friend class arena_allocator;

  request_arena* arena_;
};

}  // namespace knit_server
