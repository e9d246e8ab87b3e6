// Reads the budget's defaults from the cgroup v2 files and /proc/sys/net/ipv4/tcp_wmem.
#include "limits/memory_budget.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <sstream>

namespace knit_server {
namespace {

std::optional<std::string> read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  return text;
}

constexpr std::uint64_t kMiB = 1024 * 1024;

}  // namespace

std::optional<std::string> cgroup_v2_path(std::string_view proc_self_cgroup) {
  std::size_t start = 0;
  while (start < proc_self_cgroup.size()) {
    std::size_t end = proc_self_cgroup.find('\n', start);
    if (end == std::string_view::npos) end = proc_self_cgroup.size();
    const std::string_view line = proc_self_cgroup.substr(start, end - start);
    if (line.starts_with("0::")) return std::string(line.substr(3));
    start = end + 1;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> parse_memory_max(std::string_view text) {
  text = trim(text);
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc{} || end != text.data() + text.size()) return std::nullopt;
  return value;  // "max" fails to parse: no limit
}

std::optional<std::uint64_t> cgroup_memory_max(const std::filesystem::path& cgroup_root,
                                               std::string_view path) {
  std::optional<std::uint64_t> tightest;
  std::filesystem::path level = std::filesystem::path(path).relative_path();
  for (;;) {
    if (auto text = read_file(cgroup_root / level / "memory.max")) {
      if (auto max = parse_memory_max(*text)) tightest = std::min(tightest.value_or(*max), *max);
    }
    if (level.empty()) break;
    level = level.parent_path();
  }
  return tightest;
}

std::optional<std::uint64_t> process_memory_max() {
  const auto text = read_file("/proc/self/cgroup");
  if (!text) return std::nullopt;
  const auto path = cgroup_v2_path(*text);
  if (!path) return std::nullopt;
  return cgroup_memory_max("/sys/fs/cgroup", *path);
}

memory_budget resolve_memory_budget(std::optional<std::uint64_t> setting_mb,
                                    std::optional<std::uint64_t> cgroup_max) {
  if (setting_mb) return {static_cast<std::size_t>(*setting_mb * kMiB), budget_origin::setting};
  if (cgroup_max) return {static_cast<std::size_t>(*cgroup_max / 2), budget_origin::cgroup};
  return {static_cast<std::size_t>(kFixedBudgetMb * kMiB), budget_origin::fixed};
}

std::size_t kernel_send_cap(std::size_t sndbuf_kb, std::size_t tcp_wmem_max,
                            std::optional<std::size_t> applied) noexcept {
  if (sndbuf_kb == 0) return tcp_wmem_max;
  return applied ? *applied : 2 * sndbuf_kb * 1024;
}

std::optional<std::size_t> probe_sndbuf(std::size_t sndbuf_kb) {
  if (sndbuf_kb == 0) return std::nullopt;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::nullopt;
  const int wanted = static_cast<int>(sndbuf_kb * 1024);
  int applied = 0;
  socklen_t size = sizeof applied;
  const bool ok = ::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &wanted, sizeof wanted) == 0 &&
                  ::getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &applied, &size) == 0 && applied > 0;
  ::close(fd);
  if (!ok) return std::nullopt;
  return static_cast<std::size_t>(applied);
}

std::size_t process_tcp_wmem_max() {
  constexpr std::size_t kLinuxDefault = 4 * kMiB;
  const auto text = read_file("/proc/sys/net/ipv4/tcp_wmem");
  if (!text) return kLinuxDefault;
  std::istringstream fields(*text);
  std::size_t min = 0, def = 0, max = 0;
  if (!(fields >> min >> def >> max) || max == 0) return kLinuxDefault;
  return max;
}

}  // namespace knit_server
