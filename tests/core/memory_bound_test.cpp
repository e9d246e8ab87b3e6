// Memory grows linearly with the pool: each seat has a ring of queued calls from each host
// (a job_ring, 16 bytes a slot, queue_capacity slots) and a done ring back to it (64 slots
// of 16 bytes, whatever the capacity: past it, completions go through the host's list)
// plus its slot's fixed part, so a 1,024-worker pool at the default capacity with one host
// allocates about 18 MiB (the old done rings of threads x capacity entries each would have
// needed 16 GiB). This binary replaces the global
// operator new to count the bytes the pool's constructor and its first host allocate.
#include <gtest/gtest.h>

// The replacements below pair malloc with free on purpose; GCC's check cannot see that
// operator new itself is replaced here.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>

#include "done_ring.hpp"
#include "knit/job_ring.hpp"
#include "knit/pool.hpp"
#include "knit/pool_host.hpp"

namespace {

// Bytes of one job-ring slot: the call record's pointer and its sequence.
constexpr std::size_t kSlot = knit::job_ring<void*>::kSlotBytes;
static_assert(kSlot == 16);
std::atomic<bool> counting{false};
std::atomic<std::size_t> bytes{0};

void* counted(std::size_t size, std::size_t align) {
  if (counting.load(std::memory_order_relaxed)) bytes.fetch_add(size, std::memory_order_relaxed);
  void* p = align <= alignof(std::max_align_t)
                ? std::malloc(size ? size : 1)
                : std::aligned_alloc(align, (size + align - 1) / align * align);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(std::size_t size) { return counted(size, alignof(std::max_align_t)); }
void* operator new[](std::size_t size) { return counted(size, alignof(std::max_align_t)); }
void* operator new(std::size_t size, std::align_val_t a) {
  return counted(size, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t size, std::align_val_t a) {
  return counted(size, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

namespace {

std::size_t bytes_to_build(unsigned threads, std::size_t capacity) {
  knit::pool_options o;
  o.threads = threads;
  o.queue_capacity = capacity;
  bytes = 0;
  counting = true;
  knit::pool p(o);
  (void)p.completion_fd();  // the building thread attaches: the first host's rings
  counting = false;
  const std::size_t total = bytes.load();
  p.shutdown(knit::shutdown_mode::drain);
  return total;
}

// Per worker: a job ring's slots and the first host's done ring, plus at most 4 KiB for the
// slot's cache-line-aligned fields and its thread; plus 64 KiB for the pool itself.
std::size_t linear_bound(unsigned threads, std::size_t capacity) {
  return threads * (capacity * kSlot + knit::detail::done_ring<void*>::bytes() + 4096) + 64 * 1024;
}

TEST(memory_bound, a_1024_worker_pool_allocates_linearly) {
  const std::size_t total = bytes_to_build(1024, 1024);
  RecordProperty("bytes_1024_workers_1024_slots", std::to_string(total));
  std::printf("1024 workers x 1024 slots: %zu bytes (%.1f MiB)\n", total,
              static_cast<double>(total) / (1 << 20));
  EXPECT_LE(total, linear_bound(1024, 1024));
  EXPECT_GE(total, std::size_t{1024} * 1024 * kSlot) << "the rings themselves were counted";
}

TEST(memory_bound, doubling_the_workers_doubles_the_bytes) {
  const std::size_t small = bytes_to_build(64, 1024);
  const std::size_t large = bytes_to_build(128, 1024);
  EXPECT_LE(small, linear_bound(64, 1024));
  EXPECT_LE(large, linear_bound(128, 1024));
  // Quadratic growth would make this ratio 4.
  EXPECT_LT(static_cast<double>(large) / static_cast<double>(small), 2.2);
}

}  // namespace

namespace {

// Bytes allocated on a fresh thread while it attaches to `p` (knit::pool_host).
std::size_t bytes_to_attach(knit::pool& p) {
  std::size_t total = 0;
  std::thread([&] {
    bytes = 0;
    counting = true;
    {
      knit::pool_host h(p);
      counting = false;
      total = bytes.load();
    }
  }).join();
  return total;
}

// The memory formula's per-host term (docs/many-hosts.md): an attached index adds one job
// ring of queue_capacity slots and one done ring per worker, made when the index is
// first used and kept for the next host to attach there.
TEST(memory_bound, each_attached_host_adds_threads_times_capacity_slots) {
  knit::pool_options o;
  o.threads = 64;
  o.queue_capacity = 1024;
  knit::pool p(o);
  const std::size_t rings = 64u * 1024u * kSlot;
  const std::size_t first = bytes_to_attach(p);
  RecordProperty("attach_bytes", std::to_string(first));
  EXPECT_GE(first, rings);
  const std::size_t done_rings = 64u * knit::detail::done_ring<void*>::bytes();
  EXPECT_GE(first, rings + done_rings);
  EXPECT_LE(first, rings + done_rings + 64u * 512u + 16u * 1024u)
      << "the rings' fixed parts, plus the host's";
  const std::size_t again = bytes_to_attach(p);  // the same index, reused
  EXPECT_LT(again, 4096u) << "a reused index keeps its rings";
}

}  // namespace
