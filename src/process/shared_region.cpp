// The region's creation (host: memfd, size, header) and mapping (child: size and header
// checked before anything is trusted). The layout and protocol: shared_region.hpp.
#include "process/shared_region.hpp"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

namespace knit::detail {

shared_region::shared_region(shared_region&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      arena_bytes_(std::exchange(other.arena_bytes_, 0)) {}

shared_region& shared_region::operator=(shared_region&& other) noexcept {
  if (this != &other) {
    if (base_) ::munmap(base_, bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    arena_bytes_ = std::exchange(other.arena_bytes_, 0);
  }
  return *this;
}

shared_region::~shared_region() {
  if (base_) ::munmap(base_, bytes_);
}

shared_region create_region(std::size_t arena_bytes, std::uint64_t spin_ns,
                            const region_sandbox& sandbox, unique_fd& memfd) {
  const std::size_t bytes = region_bytes(arena_bytes);
  // The name shows in /proc/PID/maps ("/memfd:knit-worker (deleted)"): what the leak test
  // counts.
  unique_fd fd(::memfd_create("knit-worker", MFD_CLOEXEC));
  if (!fd) throw std::system_error(errno, std::generic_category(), "knit: memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    throw std::system_error(errno, std::generic_category(), "knit: ftruncate of the memfd");
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "knit: mmap of the memfd");
  }
  shared_region region(base, bytes, arena_bytes);
  region_header& h = region.header();
  h.magic = region_magic;
  h.version = region_version;
  h.arena_bytes = arena_bytes;
  h.spin_ns = spin_ns;
  h.sandbox = sandbox.strict;
  h.open_files = sandbox.open_files;
  h.memory_limit = sandbox.memory_limit;
  memfd = std::move(fd);
  return region;
}

shared_region map_region(int memfd, std::size_t arena_bytes) noexcept {
  const std::size_t bytes = region_bytes(arena_bytes);
  struct stat st {};
  if (::fstat(memfd, &st) != 0 || static_cast<std::size_t>(st.st_size) != bytes) return {};
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) return {};
  shared_region region(base, bytes, arena_bytes);
  const region_header& h = region.header();
  if (h.magic != region_magic || h.version != region_version || h.arena_bytes != arena_bytes) {
    return {};
  }
  return region;
}

}  // namespace knit::detail
