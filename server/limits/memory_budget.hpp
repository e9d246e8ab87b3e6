// Where the write budget's size comes from: KNIT_MEMORY_BUDGET_MB, else half the cgroup v2
// memory.max of the process, else a fixed 1024 MB; and the per-connection kernel cap that
// KNIT_SNDBUF_KB implies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace knit_server {

// The cgroup v2 path of the process from the text of /proc/self/cgroup: the path of the
// "0::" line ("0::/system.slice/knit.service" -> "/system.slice/knit.service"); nullopt
// when there is none (cgroup v1 only).
std::optional<std::string> cgroup_v2_path(std::string_view proc_self_cgroup);

// A memory.max file's text: a byte count, or "max" (no limit, nullopt). nullopt for anything
// else too: a file we cannot read is no limit we know of.
std::optional<std::uint64_t> parse_memory_max(std::string_view text);

// The tightest memory.max from the process's cgroup up to the root of the hierarchy mounted
// at `cgroup_root` (the kernel enforces every ancestor's limit): `path` is cgroup_v2_path's
// answer. nullopt when no level sets one.
std::optional<std::uint64_t> cgroup_memory_max(const std::filesystem::path& cgroup_root,
                                               std::string_view path);

// cgroup_memory_max for this process: /proc/self/cgroup and /sys/fs/cgroup.
std::optional<std::uint64_t> process_memory_max();

// The largest response the server is known to write: /ssr with a 64 KiB name of `'`
// (787,387 B of body) plus its head. Admission sheds once less room than its cost is left
// (write_budget::over), and the banner counts how many of its slow readers fit.
inline constexpr std::size_t kLargestResponseBytes = 787'387 + 100;

// Where the budget came from, for the banner.
enum class budget_origin {
  setting,  // KNIT_MEMORY_BUDGET_MB
  cgroup,   // half the cgroup's memory.max
  fixed,    // no setting and no cgroup limit
};

struct memory_budget {
  std::size_t bytes = 0;
  budget_origin origin = budget_origin::fixed;
};

// Without a setting and without a cgroup limit: 1024 MB. Why: it admits about 1,150 slow
// readers of the largest /ssr page (787 KB each, plus its capped send queue) before
// shedding, and it is never reached by ordinary traffic: 10,000 connections (the default
// KNIT_MAX_CONNECTIONS) each writing a 50 KB page at once park about 1,000 MB, and the
// benchmark's pages are a few KB. 1 GiB is also what a small container or an 8 GB host can
// spare for socket buffers without the OOM killer coming first.
inline constexpr std::uint64_t kFixedBudgetMb = 1024;

// The budget: the setting when there is one; else half of memory.max, since the cgroup is
// charged for everything else too (input buffers, idle connections, the pool, the allocator's
// slack) and shedding must start before the OOM killer does; else kFixedBudgetMb.
memory_budget resolve_memory_budget(std::optional<std::uint64_t> setting_mb,
                                    std::optional<std::uint64_t> cgroup_max);

// The most one socket's send queue holds: Linux doubles SO_SNDBUF (the doubled value
// covers the kernel's own per-packet overhead, sk_wmem_queued counts both), so 2 ×
// KNIT_SNDBUF_KB KiB, or `applied`, what getsockopt reads back on a socket given that value
// (it also reflects the clamp to net.core.wmem_max) when known. With 0 (the kernel's
// autotuning left on) it is tcp_wmem's maximum, `tcp_wmem_max` (the third field of
// /proc/sys/net/ipv4/tcp_wmem).
std::size_t kernel_send_cap(std::size_t sndbuf_kb, std::size_t tcp_wmem_max,
                            std::optional<std::size_t> applied = std::nullopt) noexcept;

// What SO_SNDBUF = sndbuf_kb KiB reads back as on a fresh TCP socket (the doubled, clamped
// value); nullopt when the probe fails or sndbuf_kb is 0.
std::optional<std::size_t> probe_sndbuf(std::size_t sndbuf_kb);

// The third field of /proc/sys/net/ipv4/tcp_wmem; 4 MiB (Linux's default) when unreadable.
std::size_t process_tcp_wmem_max();

}  // namespace knit_server
