// The region's creation (host: memfd, size, header) and mapping (child: size and header
// checked before anything is trusted). The layout and protocol: shared_region.hpp.
#include "process/shared_region.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>
#include <utility>

#include "invariant.hpp"

namespace knit::detail {

shared_region::shared_region(shared_region&& other) noexcept
    : base_(std::exchange(other.base_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      arena_bytes_(std::exchange(other.arena_bytes_, 0)),
      lanes_(std::exchange(other.lanes_, 0)) {}

shared_region& shared_region::operator=(shared_region&& other) noexcept {
  if (this != &other) {
    if (base_) ::munmap(base_, bytes_);
    base_ = std::exchange(other.base_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    arena_bytes_ = std::exchange(other.arena_bytes_, 0);
    lanes_ = std::exchange(other.lanes_, 0);
  }
  return *this;
}

shared_region::~shared_region() {
  if (base_) ::munmap(base_, bytes_);
}

shared_region create_region(std::size_t arena_bytes, unsigned lanes, std::uint64_t spin_ns,
                            const region_sandbox& sandbox, unique_fd& memfd) {
  KNIT_ASSERT(lanes >= 1 && lanes <= region_max_lanes);  // process_options::validate
  const std::size_t bytes = region_bytes(arena_bytes, lanes);
  // The name shows in /proc/PID/maps ("/memfd:knit-proc (deleted)"): what the leak test
  // counts.
  unique_fd fd(::memfd_create("knit-proc", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) throw std::system_error(errno, std::generic_category(), "knit: memfd_create");
  if (::ftruncate(fd.get(), static_cast<off_t>(bytes)) != 0) {
    throw std::system_error(errno, std::generic_category(), "knit: ftruncate of the memfd");
  }
  // Its size fixed for good: a child that shrank it (through its fd, or one it opens again
  // from /proc) would make the host's next read of its mapping a SIGBUS, the host's death.
  // F_SEAL_SEAL: no one takes that back. Not F_SEAL_WRITE: both sides write the mapping.
  if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    throw std::system_error(errno, std::generic_category(), "knit: sealing the memfd");
  }
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) {
    throw std::system_error(errno, std::generic_category(), "knit: mmap of the memfd");
  }
  shared_region region(base, bytes, arena_bytes, lanes);
  region_header& h = region.header();
  h.magic = region_magic;
  h.version = region_version;
  h.arena_bytes = arena_bytes;
  h.lanes = lanes;
  h.spin_ns = spin_ns;
  h.sandbox = sandbox.strict;
  h.open_files = sandbox.open_files;
  h.memory_limit = sandbox.memory_limit;
  memfd = std::move(fd);
  return region;
}

shared_region map_region(int memfd, std::size_t arena_bytes) noexcept {
  // The size says how many lanes the host made; the header must say the same.
  const std::size_t lane_pair = 2 * round_to_page(arena_bytes);
  struct stat st {};
  if (::fstat(memfd, &st) != 0 || st.st_size < 0) return {};
  const auto bytes = static_cast<std::size_t>(st.st_size);
  if (bytes <= region_page || (bytes - region_page) % lane_pair != 0) return {};
  const std::size_t lanes = (bytes - region_page) / lane_pair;
  if (lanes < 1 || lanes > region_max_lanes) return {};
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
  if (base == MAP_FAILED) return {};
  shared_region region(base, bytes, arena_bytes, static_cast<unsigned>(lanes));
  const region_header& h = region.header();
  if (h.magic != region_magic || h.version != region_version || h.arena_bytes != arena_bytes ||
      h.lanes != lanes) {
    return {};
  }
  return region;
}

}  // namespace knit::detail
