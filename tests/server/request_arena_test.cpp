// request_arena.hpp: reuse after everything is freed, heap spill, and Beast fields on top.
#include "http/request_arena.hpp"  // first: the header must be self-contained

#include <string>

#include <gtest/gtest.h>
#include <boost/beast/http/fields.hpp>

namespace knit_server {
namespace {

TEST(request_arena, reuses_the_block_once_everything_is_freed) {
  request_arena arena;
  void* a = arena.allocate(100, 8);
  void* b = arena.allocate(100, 8);
  EXPECT_NE(a, b);
  arena.deallocate(a);
  void* c = arena.allocate(10, 8);  // b is still live: no reuse yet
  EXPECT_NE(c, a);
  arena.deallocate(b);
  arena.deallocate(c);
  EXPECT_EQ(arena.allocate(10, 8), a);  // empty again: back to the start
}

TEST(request_arena, spills_to_the_heap_when_full) {
  request_arena arena;
  void* small = arena.allocate(16, 8);
  void* big = arena.allocate(request_arena::kSize, 8);  // cannot fit after `small`
  ASSERT_NE(big, nullptr);
  static_cast<char*>(big)[request_arena::kSize - 1] = 'x';  // all of it is usable
  arena.deallocate(big);
  arena.deallocate(small);
  EXPECT_EQ(arena.allocate(16, 8), small);
}

TEST(request_arena, carries_beast_fields_through_many_requests) {
  request_arena arena;
  using fields = boost::beast::http::basic_fields<arena_allocator<char>>;
  for (int request = 0; request < 100; ++request) {
    fields f{arena_allocator<char>(arena)};
    // Enough fields to spill past the block on some requests.
    const int count = request % 40;
    for (int i = 0; i < count; ++i) f.insert("X-Field-" + std::to_string(i), std::string(20, 'v'));
    EXPECT_EQ(std::distance(f.begin(), f.end()), count);
  }
}

}  // namespace
}  // namespace knit_server
